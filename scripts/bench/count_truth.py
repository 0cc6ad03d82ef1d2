"""How true is the count a user sees? `lookout run` against a hand count of the sample video.

Replays the video through a real `lookout run --pace fast --events FILE` (the local model,
no status server) and reads the `count` events: the count *in effect* at each hand-counted
frame is the last count event at or before that frame's time, which is what the page, MQTT
and the model were showing then. The detector's own number (`raw`, boxes at the threshold
in the newest frame it looked at) comes from `lookout count --json` over the same video,
which perceives the same frames the same way (the bench checks that its counts equal the
run's, frame by frame). For each series it prints:

- MAE: the mean absolute error against the hand count; exact: the share of frames right;
- bias: the mean signed error (negative: fewer than there are);
- delay: the shift d (seconds, -3..+5 in 0.1 s steps) that best aligns the series with
  the truth, i.e. minimises the MAE of series(t + d) against truth(t): a count that trails
  the scene by 4 s has d = 4; and the MAE at that shift;

then the largest count on the empty plaza (the sample video without its people, 20 s).

    python scripts/bench/count_truth.py [--truth tests/data/vtest_people.json]
        [--before PATH] [-- extra perception flags, e.g. --detect-fps 5]

--before is an earlier checkout (``git worktree add /tmp/before <commit>``), run with this
interpreter, for a before/after table in one run. Zone rows appear when the truth file has
hand-counted zones (``zones``) and the flags name them.

Goal (issue 21): the count's MAE no worse than raw's, exact >= 0.6, delay <= 1 s, and 0 on
the empty scene.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu
from motion import empty_plaza, write_still

from device.app.parts import sample_video
from tests.truth import TRUTH_FILE, Score, Series, load_truth, score

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = [sys.executable, "-c", "import sys; from device.cli import main; sys.exit(main())"]


def lookout_command(before: Path | None) -> tuple[list[str], Path]:
    """``lookout`` as run from a checkout (this one, or ``before``): not the installed
    script, whose editable install may point at another checkout (a git worktree's
    bench would measure the main one)."""
    return list(LAUNCHER), before or REPO


def run_counts(
    video: Path, flags: list[str], before: Path | None, work: Path
) -> tuple[Series, dict[str, Series]]:
    """The count, and each zone's count, in effect over a `lookout run --pace fast` replay."""
    events = work / f"events-{video.stem}-{'before' if before else 'now'}.jsonl"
    command, cwd = lookout_command(before)
    command += ["run", "--source", str(video), "--pace", "fast", "--model", "local"]
    command += ["--no-http", "--events", str(events), *flags]
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    count = Series()
    zones: dict[str, Series] = {}
    for line in events.read_text().splitlines():
        event = json.loads(line)
        t = event.get("t_media")
        if t is None:
            continue
        # Unknown (null) only at the end of the file here: the last count stands to the end.
        if event["type"] == "count" and event["count"] is not None:
            count.add(float(t), event["count"])
        elif event["type"] == "zone" and event["people"] is not None:
            zones.setdefault(event["zone"], Series()).add(float(t), event["people"])
    return count, zones


def count_records(video: Path, flags: list[str]) -> list[dict[str, Any]]:
    """`lookout count --json` over the video: one record per frame perceived."""
    command = [*LAUNCHER, "count", str(video), "--json", *flags]
    out = subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def empty_scene_max(video: Path, flags: list[str], work: Path) -> int:
    still = write_still(work / "empty.avi", empty_plaza(video), 20.0, video)
    series, _ = run_counts(still, flags, None, work)
    return max(series.values, default=0)


def row(name: str, m: Score, n: int) -> str:
    return (
        f"{name:<34}{n:>4}{m.mae:>7.3f}{m.exact:>7.2f}{m.bias:>+7.2f}"
        f"{m.delay:>+7.1f}{m.mae_at_delay:>8.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--truth", type=Path, default=TRUTH_FILE)
    parser.add_argument("--before", type=Path, default=None, help="an earlier checkout")
    parser.add_argument("--no-empty", action="store_true", help="skip the empty-scene run")
    parser.add_argument("flags", nargs="*", help="extra lookout run flags (after --)")
    args = parser.parse_args()
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    truth = load_truth(args.truth)
    n = len(truth.counts)
    print(describe_cpu())
    print(
        f"truth: {args.truth.name}, {n} hand-counted frames of {video.name}; "
        f"flags: {' '.join(args.flags) or '(defaults)'}"
    )
    header = f"{'series':<34}{'n':>4}{'MAE':>7}{'exact':>7}{'bias':>7}{'delay':>7}{'MAE@d':>8}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        end = truth.end_t
        before_zones: dict[str, Series] = {}
        if args.before is not None:
            before, before_zones = run_counts(video, args.flags, args.before.resolve(), work)
            print(row("count, before (lookout run)", score(before, truth.counts, end), n))
        count, zones = run_counts(video, args.flags, None, work)
        print(row("count (lookout run)", score(count, truth.counts, end), n))
        records = count_records(video, args.flags)
        raw = Series()
        for r in records:
            raw.add(float(r["t"]), int(r["raw"]))
        print(row("raw (detector, newest frame)", score(raw, truth.counts, end), n))
        same = sum(1 for r in records if count.at(float(r["t"])) == r["count"])
        for name, zone_truth in truth.zones.items():
            if name in before_zones:
                zone_score = score(before_zones[name], zone_truth, end)
                print(row(f"zone {name}, before", zone_score, len(zone_truth)))
            if name in zones:
                zone_score = score(zones[name], zone_truth, end)
                print(row(f"zone {name} (lookout run)", zone_score, len(zone_truth)))
        print(
            f"lookout count --json agrees with lookout run at {same} of {len(records)} "
            "frames perceived"
        )
        if not args.no_empty:
            print(f"empty plaza, 20 s: largest count {empty_scene_max(video, args.flags, work)}")
    print(
        "MAE: mean absolute error; exact: share of frames right; bias: mean signed error; "
        "delay: the shift (s) that best aligns the series with the truth (positive: it "
        "trails the scene); MAE@d: the MAE at that shift"
    )


if __name__ == "__main__":
    main()
