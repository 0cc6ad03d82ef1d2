"""The hand count of the sample video (tests/data/vtest_people.json) and how a count is
scored against it: by the tests of the count and by scripts/bench/count_truth.py."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path

TRUTH_FILE = Path(__file__).resolve().parent / "data" / "vtest_people.json"
DELAYS = tuple(round(-3.0 + 0.1 * k, 1) for k in range(81))  # -3 s .. +5 s


@dataclass(frozen=True)
class Truth:
    """People in view at hand-counted frames, by media time (seconds)."""

    counts: dict[float, int]
    end_t: float  # the last frame's time: a shifted lookup stops there
    fps: float
    zones: dict[str, dict[float, int]] = field(default_factory=dict)


def load_truth(path: Path = TRUTH_FILE) -> Truth:
    data = json.loads(path.read_text())
    fps = float(data["fps"])
    zones = {
        name: {int(f) / fps: int(n) for f, n in zone["counts"].items()}
        for name, zone in data.get("zones", {}).items()
    }
    return Truth(
        counts={int(f) / fps: int(n) for f, n in data["counts"].items()},
        end_t=(int(data["frames"]) - 1) / fps,
        fps=fps,
        zones=zones,
    )


@dataclass
class Series:
    """A step function of media time: the value of the last point at or before t."""

    times: list[float] = field(default_factory=list)
    values: list[int] = field(default_factory=list)

    def add(self, t: float, value: int) -> None:
        self.times.append(t)
        self.values.append(value)

    def at(self, t: float) -> int:
        k = bisect.bisect_right(self.times, t + 1e-6) - 1
        return self.values[k] if k >= 0 else 0


@dataclass(frozen=True)
class Score:
    mae: float  # mean absolute error
    exact: float  # share of frames exactly right
    bias: float  # mean signed error (negative: fewer than there are)
    delay: float  # the shift (s) that best aligns the series with the truth
    mae_at_delay: float


def score(series: Series, truth: dict[float, int], end_t: float) -> Score:
    """``series`` against ``truth``; ``delay`` d minimises the MAE of series(t + d) vs truth(t)
    (a count that trails the scene by 4 s has d = 4); ties go to the smallest |d|."""

    def errors(shift: float) -> list[int]:
        return [series.at(min(max(t + shift, 0.0), end_t)) - n for t, n in truth.items()]

    mae = {d: sum(abs(e) for e in errors(d)) / len(truth) for d in DELAYS}
    best = min(DELAYS, key=lambda d: (round(mae[d], 9), abs(d)))
    now = errors(0.0)
    return Score(
        mae=mae[0.0],
        exact=sum(1 for e in now if e == 0) / len(now),
        bias=sum(now) / len(now),
        delay=best,
        mae_at_delay=mae[best],
    )


__all__ = ["TRUTH_FILE", "Score", "Series", "Truth", "load_truth", "score"]
