"""Hand-timed line crossings of the sample video (tests/data/vtest_crossings_*.json) and how
a run's crossings are scored against them, one to one: by the test of the lines on the real
video and by scripts/bench/crossings.py.

A truth file: ``{"fps", "line": {"name", "points", "pixels"}, "crossings": [{"frame",
"direction": "in"|"out", "sure", "note"}]}``, "in" from the line's left to its right.

Unsure truth crossings (``"sure": false``, say a step over the line and back) are neither
owed nor forbidden: a crossing matched to one is not a false positive, and one left
unmatched is not a miss. So, with M sure matches, E crossings matched to nothing and S sure
truth crossings: precision = M / (M + E), recall = M / S, F1 their harmonic mean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DIRECTIONS = ("in", "out")


def truth_files() -> list[Path]:
    """Every hand-timed line of the sample video."""
    return sorted(DATA.glob("vtest_crossings_*.json"))


@dataclass(frozen=True)
class TruthCrossing:
    frame: float
    direction: str
    sure: bool


@dataclass(frozen=True)
class LineTruth:
    name: str
    points: tuple[tuple[float, float], tuple[float, float]]
    fps: float
    crossings: tuple[TruthCrossing, ...]
    path: Path

    def count(self, direction: str, *, unsure: bool = False) -> int:
        return sum(1 for c in self.crossings if c.direction == direction and (c.sure or unsure))


def load_line_truth(path: Path) -> LineTruth:
    data = json.loads(path.read_text())
    (x1, y1), (x2, y2) = data["line"]["points"]
    crossings = tuple(
        TruthCrossing(float(c["frame"]), str(c["direction"]), bool(c.get("sure", True)))
        for c in data["crossings"]
    )
    for c in crossings:
        if c.direction not in DIRECTIONS:
            raise ValueError(f"{path}: direction {c.direction!r} is neither in nor out")
    return LineTruth(
        name=str(data["line"]["name"]),
        points=((float(x1), float(y1)), (float(x2), float(y2))),
        fps=float(data["fps"]),
        crossings=crossings,
        path=path,
    )


@dataclass(frozen=True)
class Match:
    """One direction's (or both directions') agreement at one tolerance."""

    sure: int  # sure truth crossings
    unsure: int
    counted: int  # the system's crossings
    matched: int  # to sure truth crossings
    matched_unsure: int
    distance: float  # frames, summed over the sure and unsure matches

    @property
    def missed(self) -> int:
        return self.sure - self.matched

    @property
    def extra(self) -> int:
        return self.counted - self.matched - self.matched_unsure

    @property
    def precision(self) -> float:
        judged = self.matched + self.extra
        return self.matched / judged if judged else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.sure if self.sure else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: Match) -> Match:
        return Match(
            self.sure + other.sure,
            self.unsure + other.unsure,
            self.counted + other.counted,
            self.matched + other.matched,
            self.matched_unsure + other.matched_unsure,
            self.distance + other.distance,
        )


def match(truth: list[TruthCrossing], found: list[float], tolerance: float) -> Match:
    """The best one-to-one matching of one direction's truth crossings and the system's
    (frames), pairs at most ``tolerance`` apart: most sure pairs, then most unsure pairs,
    then the least total distance.

    On a line an optimal matching can always keep the order (two crossed pairs both within
    the tolerance uncross into two that are, no further apart in total), so a dynamic
    programme over the two sorted lists finds it exactly.
    """
    want = sorted(truth, key=lambda c: c.frame)
    got = sorted(found)
    # best[i][j]: (sure pairs, unsure pairs, -distance) over want[:i] and got[:j].
    best = [[(0, 0, 0.0)] * (len(got) + 1) for _ in range(len(want) + 1)]
    for i in range(1, len(want) + 1):
        for j in range(1, len(got) + 1):
            options = [best[i - 1][j], best[i][j - 1]]
            gap = abs(want[i - 1].frame - got[j - 1])
            if gap <= tolerance:
                s, u, d = best[i - 1][j - 1]
                if want[i - 1].sure:
                    options.append((s + 1, u, d - gap))
                else:
                    options.append((s, u + 1, d - gap))
            best[i][j] = max(options)
    s, u, d = best[len(want)][len(got)]
    return Match(
        sure=sum(1 for c in want if c.sure),
        unsure=sum(1 for c in want if not c.sure),
        counted=len(got),
        matched=s,
        matched_unsure=u,
        distance=-d,
    )


def score_crossings(line: LineTruth, found: dict[str, list[float]], tolerance: float) -> Match:
    """Both directions of a line, each matched on its own, summed."""
    total = Match(0, 0, 0, 0, 0, 0.0)
    for direction in DIRECTIONS:
        want = [c for c in line.crossings if c.direction == direction]
        total = total + match(want, found.get(direction, []), tolerance)
    return total


__all__ = [
    "DIRECTIONS",
    "LineTruth",
    "Match",
    "TruthCrossing",
    "load_line_truth",
    "match",
    "score_crossings",
    "truth_files",
]
