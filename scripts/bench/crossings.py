"""Line crossings, crossing by crossing, against hand-timed truth (issue 36).

For each truth file (default: every tests/data/vtest_crossings_*.json) the sample video is
replayed through a real ``lookout run --pace fast --events FILE --line NAME=... --model
local --no-http`` (the shipped detector, motion gate, tracker and lines: what a device
runs), at each detection rate asked (default 5, the rate with lines, and 10 fps); every
truth file's line is drawn in the same run (lines do not change the tracking). Each
``crossing`` event is dated by its ``t_media`` (when the path met the line) times the
video's fps, and matched one-to-one, per direction, to the truth crossings within each
tolerance (default 5 and 10 frames). The matching is optimal, not greedy: most sure
truth crossings matched, then most unsure ones, then least total time distance (an
order-keeping dynamic programme, exact for times on a line).

Unsure truth crossings (``"sure": false``, say a step over the line and back) are
neither owed nor forbidden: a crossing matched to one is not a false positive, and one
left unmatched is not a miss. So, with M sure matches, E crossings matched to nothing
and S sure truth crossings: precision = M / (M + E), recall = M / S, F1 their harmonic
mean; ``missed`` = S - M.

    python scripts/bench/crossings.py [TRUTH.json ...] [--fps 5,10] [--tolerance 5,10]
        [--before PATH] [--video PATH] [--cache DIR | --no-cache] [--detail]
        [-- extra lookout run flags]

--before is an earlier checkout (``git worktree add /tmp/before <commit>``), run with this
interpreter, for a before/after table in one run. Both checkouts are run by path
(``PYTHONPATH``), never through the installed ``lookout`` script, whose editable install
may point at another checkout.

The detector's answers are remembered per (model, settings, frame pixels) in --cache
(tests/detection_cache.py; default ~/.cache/lookout/bench-detections), so only the
first run over the video pays for inference (795 frames: a few minutes on 2 cores);
everything after the detector, the tracker included, runs for real every time.
--no-cache runs the detector on every frame.

Goal (issue 36): per direction within 1 of the sure hand count, F1 >= 0.95 at 5 frames.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.app.parts import sample_video
from tests.crossings import DIRECTIONS, LineTruth, load_line_truth, score_crossings, truth_files

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = Path.home() / ".cache" / "lookout" / "bench-detections"


@contextlib.contextmanager
def remembered_detections(folder: Path | None) -> Iterator[None]:
    if folder is None:
        yield
        return
    from tests.detection_cache import remembered

    folder.mkdir(parents=True, exist_ok=True)
    with remembered(folder):
        yield


def run_crossings(
    checkout: Path,
    video: Path,
    lines: list[LineTruth],
    fps: float,
    flags: list[str],
    work: Path,
) -> dict[str, dict[str, list[float]]]:
    """``lookout run`` from ``checkout`` over the video with every line drawn: each line's
    crossings by direction, as frames of the video (``t_media`` times its fps)."""
    events = work / f"events-{abs(hash(str(checkout)))}-{fps:g}.jsonl"
    events.unlink(missing_ok=True)
    command = [sys.executable, "-c", "import sys; from device.entry import main; sys.exit(main())"]
    command += ["run", "--source", str(video), "--pace", "fast", "--model", "local"]
    command += ["--no-http", "--events", str(events), "--detect-fps", f"{fps:g}"]
    for line in lines:
        (x1, y1), (x2, y2) = line.points
        command += ["--line", f"{line.name}={x1:g},{y1:g},{x2:g},{y2:g}"]
    command += flags
    env = dict(os.environ)
    # The checkout's modules first (the working directory is a scratch one: a run may
    # write files), then whatever the detection cache put there.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(checkout), os.environ.get("PYTHONPATH", "")) if p
    )
    subprocess.run(command, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    video_fps = {line.name: line.fps for line in lines}
    found: dict[str, dict[str, list[float]]] = {line.name: {"in": [], "out": []} for line in lines}
    for text in events.read_text().splitlines():
        event = json.loads(text)
        if event.get("type") != "crossing" or event.get("line") not in found:
            continue
        frame = float(event["t_media"]) * video_fps[event["line"]]
        found[event["line"]][event["direction"]].append(frame)
    return found


HEADER = (
    f"{'line':<8}{'fps':>4}{'tol':>4}  {'truth in/out':<16}{'counted':>8}{'Δin/Δout':>10}"
    f"{'match':>7}{'miss':>5}{'extra':>6}{'P':>6}{'R':>6}{'F1':>6}{'|d|':>6}"
)


def row(label: str, line: LineTruth, fps: float, tol: float, found: dict[str, list[float]]) -> str:
    m = score_crossings(line, found, tol)
    sure = f"{line.count('in')}/{line.count('out')}"
    with_unsure = f"{line.count('in', unsure=True)}/{line.count('out', unsure=True)}"
    truth = sure if sure == with_unsure else f"{sure} ({with_unsure})"
    counted_in, counted_out = len(found.get("in", [])), len(found.get("out", []))
    delta = f"{counted_in - line.count('in'):+d}/{counted_out - line.count('out'):+d}"
    pairs = m.matched + m.matched_unsure
    mean_gap = m.distance / pairs if pairs else 0.0
    matched = f"{m.matched}" + (f"+{m.matched_unsure}" if m.matched_unsure else "")
    return (
        f"{line.name:<8}{fps:>4g}{tol:>4g}  {truth:<16}{f'{counted_in}/{counted_out}':>8}"
        f"{delta:>10}{matched:>7}{m.missed:>5}{m.extra:>6}{m.precision:>6.2f}{m.recall:>6.2f}"
        f"{m.f1:>6.3f}{mean_gap:>6.1f}  {label}"
    )


def detail(line: LineTruth, found: dict[str, list[float]], tol: float) -> list[str]:
    """Each truth crossing with the nearest system crossing of its direction, and each
    system crossing with no truth crossing within ``tol``: for reading, not scoring."""
    out = []
    for c in sorted(line.crossings, key=lambda c: c.frame):
        near = min(found.get(c.direction, []), key=lambda f: abs(f - c.frame), default=None)
        gap = "-" if near is None else f"{near - c.frame:+.1f}"
        flag = "" if c.sure else " (unsure)"
        out.append(f"    truth {c.frame:6.0f} {c.direction:<3} nearest {gap:>7}{flag}")
    for direction in DIRECTIONS:
        frames = [c.frame for c in line.crossings if c.direction == direction]
        for f in sorted(found.get(direction, [])):
            if not any(abs(f - t) <= tol for t in frames):
                out.append(f"    extra {f:6.1f} {direction}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("truth", nargs="*", type=Path, help="truth files (default: all)")
    parser.add_argument("--fps", default="5,10", help="detection rates (default 5,10)")
    parser.add_argument("--tolerance", default="5,10", help="frames (default 5,10)")
    parser.add_argument("--before", type=Path, default=None, help="an earlier checkout")
    parser.add_argument("--video", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--detail", action="store_true", help="crossing by crossing")
    argv = sys.argv[1:]
    # Everything after -- goes to lookout run (two open-ended positionals cannot be told apart).
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.flags = argv[cut + 1 :]
    paths = args.truth or truth_files()
    if not paths:
        sys.exit("no truth files (tests/data/vtest_crossings_*.json)")
    lines = [load_line_truth(p) for p in paths]
    video = args.video or sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    rates = [float(x) for x in args.fps.split(",")]
    tolerances = [float(x) for x in args.tolerance.split(",")]
    cache = None if args.no_cache else args.cache
    print(describe_cpu())
    print(
        f"video {video.name}; truth: {', '.join(p.name for p in paths)}; "
        f"flags: {' '.join(args.flags) or '(defaults)'}; detections "
        f"{'run every time' if cache is None else f'remembered in {cache}'}; "
        "matching: optimal per direction"
    )
    runs: list[tuple[str, Path]] = []
    if args.before is not None:
        runs.append(("before", args.before.resolve()))
    runs.append(("now" if args.before is not None else "", REPO))
    results: dict[tuple[str, float], dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp, remembered_detections(cache):
        for fps in rates:
            for label, checkout in runs:
                start = time.monotonic()
                results[(label, fps)] = run_crossings(
                    checkout, video, lines, fps, args.flags, Path(tmp)
                )
                print(f"  ran {label or 'this checkout'} at {fps:g} fps in "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr)  # fmt: skip
    print(HEADER)
    print("-" * len(HEADER))
    for line in lines:
        for fps in rates:
            for tol in tolerances:
                for label, _ in runs:
                    print(row(label, line, fps, tol, results[(label, fps)][line.name]))
    if args.detail:
        for line in lines:
            for fps in rates:
                for label, _ in runs:
                    print(f"{line.name} at {fps:g} fps {label}:")
                    print("\n".join(detail(line, results[(label, fps)][line.name], 5)))
    print(
        "truth: sure in/out (with unsure); counted: the run's crossings; Δ: counted - sure; "
        "match: pairs with sure truth (+ with unsure); miss: sure truth unmatched; extra: "
        "crossings matched to nothing; P, R, F1 over sure truth, a match to an unsure one "
        "neither a hit nor a false positive; |d|: mean frames between matched pairs"
    )


if __name__ == "__main__":
    main()
