"""The question table of ``lookout ask`` (``tests/ask_table.py``) against a checkout: right,
refused and wrong, per class of question, judged on what the command prints.

    python scripts/bench/ask_table.py [--root CHECKOUT] [--show wrong,refused] [--held-out]

It runs ``lookout run`` of the sample video with the table's line, zone and dwell once (in
this checkout, at --pace fast: the log is the same whichever Lookout asks), then each
question as a user would (``python -m device.cli ask QUESTION --db LOG``, or with the
sample video as --source for questions about now), in ``--root`` (default: this checkout;
an earlier one made with ``git worktree add ../before COMMIT``). An answer is right when
it exits 0 and says every true figure; a refusal is exit 4. The log is copied for each
question: an earlier ask wrote its own events into the log it read.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe_cpu  # noqa: E402

from device.app.parts import sample_video  # noqa: E402
from device.app.report.data import load_events  # noqa: E402
from tests.ask_table import (  # noqa: E402
    HELD_OUT,
    LOG,
    REFUSED,
    RIGHT,
    ROWS,
    RUN_FLAGS,
    WRONG,
    ZONE,
    judge,
    truth_of,
)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout that answers")
    parser.add_argument("--show", default="wrong,refused", help="verdicts to list one by one")
    parser.add_argument(
        "--held-out", action="store_true", help="the questions written after the reader"
    )
    args = parser.parse_args()
    video = sample_video()
    if video is None:
        raise SystemExit("the sample video is missing: python3 scripts/fetch_sample_data.py")
    print(describe_cpu())
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        db = where / "day.sqlite"
        (where / "empty.toml").write_text("")
        ran = subprocess.run(
            [sys.executable, "-m", "device.cli", "run", "--source", str(video), "--model",
             "local", "--pace", "fast", "--no-http", *RUN_FLAGS, "--db", str(db),
             "--config", str(where / "empty.toml")],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if ran.returncode != 0:
            raise SystemExit(f"lookout run failed: {ran.stderr.strip()[-300:]}")
        truth = truth_of(load_events(db))
        verdicts: list[tuple[str, str, str, str]] = []
        rows = HELD_OUT if args.held_out else ROWS
        for row in rows:
            copy = where / "asked.sqlite"
            shutil.copy(db, copy)
            where_flags = (
                ["--db", str(copy)]
                if row.asked == LOG
                else ["--source", str(video), "--pace", "fast", "--zone", ZONE]
            )
            done = subprocess.run(
                [sys.executable, "-m", "device.cli", "ask", row.question, "--model", "local",
                 "--config", str(where / "empty.toml"), *where_flags],
                cwd=args.root, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            verdict, why = judge(row, truth, done.returncode, None, done.stdout)
            verdicts.append((row.what, row.question, verdict, why))
    commit = git(args.root, "rev-parse", "--short", "HEAD")
    print(f"lookout ask, {len(verdicts)} questions, in {args.root.name} ({commit}); truth: {truth}")
    print(f"{'class':24} {'questions':>9} {RIGHT:>6} {REFUSED:>8} {WRONG:>6}")
    print("-" * 57)
    for what in dict.fromkeys(w for w, *_ in verdicts):
        mine = Counter(v for w, _, v, _ in verdicts if w == what)
        total = sum(mine.values())
        print(f"{what:24} {total:9d} {mine[RIGHT]:6d} {mine[REFUSED]:8d} {mine[WRONG]:6d}")
    every = Counter(v for _, _, v, _ in verdicts)
    print("-" * 57)
    print(f"{'all':24} {len(verdicts):9d} {every[RIGHT]:6d} {every[REFUSED]:8d} {every[WRONG]:6d}")
    shown = set(args.show.split(","))
    for what, question, verdict, why in verdicts:
        if verdict in shown:
            print(f"  {verdict:7} [{what}] {question!r}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
