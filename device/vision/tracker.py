"""A multi-person tracker in the manner of ByteTrack, on numpy alone.

Each sampled frame's person boxes are matched to the tracks the Kalman
filter (``device/vision/kalman.py``) predicts for that frame's media time,
tightly first, loosely second:

1. confirmed and lost tracks against the confident boxes (score at least
   ``high``, the detector threshold the user set) that plainly overlap their
   predicted box (IoU at least ``tight_iou``);
2. tentative tracks the same way, against the confident boxes left, when
   frames are close together (``tight_tentative_s``);
3. confirmed and lost tracks still unmatched against the confident boxes
   left, generously (below);
4. confirmed tracks still unmatched against the doubtful boxes (``low`` up
   to ``high``): a person half hidden by the lamp post scores lower, and this
   pass keeps their id instead of dropping it;
5. tentative tracks against the confident boxes left, generously;
6. confident boxes still unmatched start tentative tracks.

The generous passes use the IoU of *buffered* boxes (each grown by ``buffer``
of its size on every side, more for a track that has been lost a while), so a
person who moved half a body width between two detections at 2 frames per
second still overlaps their prediction; the better of the predicted box and
the last matched one counts (a person who turned or stopped while hidden).
But a grown box also reaches the people next to it: without the tight passes
before them, a track whose person is hidden for a frame takes the box of
someone passing close by (whose own new track then dies), and that person's
crossing of a line is never counted. A tentative track has no velocity yet: its
"prediction" is where its person was a frame ago, which at 5 detections a
second (0.2 s) still overlaps them (a walker moves about half their width), but
at 2 a second (0.5 s) is as likely where the person beside them is now; so
tentative tracks take part in the tight passes only when frames are at most
``tight_tentative_s`` apart.

Pairs are taken greedily, best overlap first: with people apart by more than
their own width this gives the same pairs as an optimal assignment, and it
needs neither scipy nor ``lap`` on a Pi.

Life of a track: tentative -> confirmed -> lost -> removed. A tentative
track is confirmed after ``min_hits`` matches in a row *and* either one
confident score (``confirm_score``) or a real movement (its centre moved by
``confirm_motion`` of its height): a static false positive that never moves
and never scores high (a cone at 0.49) stays tentative for ever and is never
counted. A confirmed track that misses a frame is lost and coasts on its
prediction for up to ``max_lost_s`` of media time (the post in ``vtest.avi``
hides people for about a second), then it is removed. Ids are given at
confirmation, so they count people: 1, 2, 3...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from device.vision import kalman
from device.vision.percept import Track, TrackState
from models.detections import Detections, pairwise_iou

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class TrackerConfig:
    high: float = 0.45  # the detector threshold: boxes the device counts
    low: float = 0.2  # doubtful boxes only extend existing tracks
    tight_iou: float = 0.3  # the tight passes: plain IoU with the predicted box (0: none)
    tight_tentative_s: float = 0.25  # tentative tracks join them up to this far apart
    match_iou: float = 0.1  # the generous passes (buffered IoU: boxes grown by half their size)
    low_match_iou: float = 0.4  # second pass: doubtful boxes must overlap well
    tentative_iou: float = 0.2
    buffer: float = 0.5  # each box grown by this much of its size per side
    lost_buffer_per_s: float = 0.3  # and a lost track's by this much more per second lost
    min_hits: int = 2
    confirm_score: float = 0.6
    confirm_motion: float = 0.3  # of the box height
    max_lost_s: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.low <= self.high < 1:
            raise ValueError("need 0 < low <= high < 1")
        if self.min_hits < 1:
            raise ValueError("min_hits must be at least 1")
        if not 0 <= self.tight_iou < 1:
            raise ValueError("tight_iou must be at least 0 and less than 1")
        if self.max_lost_s < 0:
            raise ValueError("max_lost_s must not be negative")


def can_follow(interval_s: float, config: TrackerConfig | None = None) -> bool:
    """Whether detections ``interval_s`` apart can be linked into tracks: a track must
    survive, unseen, until the next detection (with room for a late frame)."""
    return interval_s < (config or TrackerConfig()).max_lost_s


@dataclass
class _State:
    box: F64  # last matched box (x1, y1, x2, y2)
    score: float
    peak: float
    since: float
    last_seen: float
    origin: F64  # first centre
    key: int = 0
    hits: int = 1
    id: int = 0  # 0 while tentative
    lost: bool = False
    moved: float = 0.0  # furthest the centre got from where it started (pixels)
    confident_at: float = 0.0  # the last time a box at ``high`` or above matched


@dataclass
class TrackerStats:
    updates: int = 0
    confirmed: int = 0  # tracks ever confirmed (the next id - 1)
    removed: int = 0


@dataclass
class Tracker:
    """Keeps people's identities from frame to frame (one per source)."""

    config: TrackerConfig = field(default_factory=TrackerConfig)
    stats: TrackerStats = field(default_factory=TrackerStats)

    def __post_init__(self) -> None:
        self._tracks: list[_State] = []
        # Kalman states, row i for self._tracks[i]: one array, so each step is one product.
        self._mean: F64 = np.zeros((0, 8))
        self._cov: F64 = np.zeros((0, 8, 8))
        self._last_t: float | None = None
        self._next_id = 1
        self._next_key = 1

    def reset(self) -> None:
        """Forget everyone (the source went down): the next frame starts afresh; ids go on."""
        self._tracks = []
        self._mean = np.zeros((0, 8))
        self._cov = np.zeros((0, 8, 8))
        self._last_t = None

    @property
    def tracks(self) -> tuple[Track, ...]:
        return self._views()

    @property
    def last_t(self) -> float | None:
        """The media time of the last update (None: nothing yet, or reset since)."""
        return self._last_t

    def skip(self, seconds: float) -> None:
        """Let ``seconds`` of media time pass as if they had not: the source was down.

        A short outage of the camera must not end everyone's track (and with it their
        stay in a zone): they are picked up where they were, as after an occlusion.
        """
        if self._last_t is None or seconds <= 0:
            return
        self._last_t += seconds
        for state in self._tracks:
            state.since += seconds
            state.last_seen += seconds
            state.confident_at += seconds

    def update(self, detections: Detections, t: float) -> tuple[Track, ...]:
        """Match this frame's boxes (any score >= ``low``) at media time ``t``.

        Returns every live track (tentative, confirmed, lost), confirmed ones first.
        """
        cfg = self.config
        first = self._last_t is None
        if self._last_t is not None and t < self._last_t:
            self.reset()  # time went back (a loop): the scene starts again
            first = True
        self.stats.updates += 1
        boxes = np.asarray(detections.boxes, np.float64).reshape(-1, 4)
        scores = np.asarray(detections.scores, np.float64).reshape(-1)
        keep = scores >= cfg.low
        boxes, scores = boxes[keep], scores[keep]
        gap = t - self._last_t if self._last_t is not None else 0.0
        self._predict(t)

        high = np.flatnonzero(scores >= cfg.high)
        low = np.flatnonzero(scores < cfg.high)
        active = [i for i, s in enumerate(self._tracks) if s.id]
        tentative = [i for i, s in enumerate(self._tracks) if not s.id]
        matched_tracks: set[int] = set()

        rest_high = [int(j) for j in high]
        if cfg.tight_iou > 0:
            pairs, active, rest_high = self._match(
                active, rest_high, boxes, cfg.tight_iou, t, plain=True
            )
            self._apply(pairs, boxes, scores, t, matched_tracks)
            if gap <= cfg.tight_tentative_s:
                pairs, tentative, rest_high = self._match(
                    tentative, rest_high, boxes, cfg.tight_iou, t, plain=True
                )
                self._apply(pairs, boxes, scores, t, matched_tracks)
        pairs, rest_tracks, rest_high = self._match(active, rest_high, boxes, cfg.match_iou, t)
        self._apply(pairs, boxes, scores, t, matched_tracks)
        recent = [i for i in rest_tracks if not self._tracks[i].lost]
        pairs, _, _ = self._match(recent, low, boxes, cfg.low_match_iou, t)
        self._apply(pairs, boxes, scores, t, matched_tracks)
        pairs, _, rest_high = self._match(tentative, rest_high, boxes, cfg.tentative_iou, t)
        self._apply(pairs, boxes, scores, t, matched_tracks)

        survivors: list[_State] = []
        kept: list[int] = []
        for i, state in enumerate(self._tracks):
            if i in matched_tracks:
                state.lost = False
            elif not state.id or t - state.last_seen > cfg.max_lost_s:
                # A tentative track must match every frame; a lost one ran out of time.
                self.stats.removed += 1
                continue
            else:
                state.lost = True
            survivors.append(state)
            kept.append(i)
        mean, cov = self._mean[kept], self._cov[kept]
        if rest_high:
            new = boxes[rest_high]
            new_mean, new_cov = kalman.initiate(new)
            mean = np.concatenate([mean, new_mean])
            cov = np.concatenate([cov, new_cov])
            survivors += [self._start(new[k], float(scores[j]), t) for k, j in enumerate(rest_high)]
        for state in survivors:
            self._confirm_if_due(state, first)
        self._tracks, self._mean, self._cov = survivors, mean, cov
        self._last_t = t
        return self._views()

    # -------------------------------------------------------------- internals

    def _views(self) -> tuple[Track, ...]:
        t = self._last_t
        predicted = kalman.z_to_boxes(self._mean[:, :4]) if self._tracks else self._mean
        views = [
            self._view(s, seen=s.last_seen == t, predicted=predicted[i])
            for i, s in enumerate(self._tracks)
        ]
        views.sort(key=lambda v: (v.id == 0, v.id))
        return tuple(views)

    @staticmethod
    def _view(state: _State, *, seen: bool, predicted: F64) -> Track:
        box = state.box if seen else predicted
        kind: TrackState = "tentative" if not state.id else ("lost" if state.lost else "confirmed")
        return Track(
            id=state.id,
            key=state.key,
            box=(float(box[0]), float(box[1]), float(box[2]), float(box[3])),
            score=round(state.score, 3),
            state=kind,
            seen=seen,
            since=state.since,
            last_seen=state.last_seen,
            confident_at=state.confident_at,
        )

    def _predict(self, t: float) -> None:
        if not self._tracks:
            return
        last = self._last_t if self._last_t is not None else t
        dt = np.full(len(self._tracks), max(t - last, 0.0))
        self._mean, self._cov = kalman.predict(self._mean, self._cov, dt)

    def _predicted_boxes(self, rows: list[int], t: float) -> tuple[F64, F64]:
        states = [self._tracks[i] for i in rows]
        boxes = kalman.z_to_boxes(self._mean[rows, :4])
        grow = np.array(
            [
                self.config.buffer + self.config.lost_buffer_per_s * max(t - s.last_seen, 0.0)
                for s in states
            ]
        )
        return boxes, grow

    def _match(
        self,
        rows: list[int],
        cols: NDArray[np.intp] | list[int],
        boxes: F64,
        threshold: float,
        t: float,
        *,
        plain: bool = False,
    ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
        """Greedy pairs (track row, box index) by buffered IoU (``plain``: the IoU of the
        predicted boxes as they are); and what is left of each."""
        col_list = [int(c) for c in cols]
        if not rows or not col_list:
            return [], list(rows), col_list
        track_boxes, grow = self._predicted_boxes(rows, t)
        det_boxes = boxes[col_list]
        if plain:
            iou = pairwise_iou(track_boxes, det_boxes)
        else:
            # Where the person was last seen counts too: someone who stopped or turned
            # while hidden is nearer there than where their old velocity would have
            # taken them.
            last_boxes = np.stack([self._tracks[i].box for i in rows])
            both = buffered_iou(
                np.concatenate([track_boxes, last_boxes]),
                np.concatenate([grow, grow]),
                det_boxes,
                self.config.buffer,
            )
            iou = np.maximum(both[: len(rows)], both[len(rows) :])
        pairs: list[tuple[int, int]] = []
        used_r: set[int] = set()
        used_c: set[int] = set()
        order = np.argsort(-iou, axis=None, kind="stable")
        for flat in order:
            r, c = divmod(int(flat), len(col_list))
            if iou[r, c] < threshold:
                break
            if r in used_r or c in used_c:
                continue
            used_r.add(r)
            used_c.add(c)
            pairs.append((rows[r], col_list[c]))
        rest_rows = [row for k, row in enumerate(rows) if k not in used_r]
        rest_cols = [col for k, col in enumerate(col_list) if k not in used_c]
        return pairs, rest_rows, rest_cols

    def _apply(
        self,
        pairs: list[tuple[int, int]],
        boxes: F64,
        scores: F64,
        t: float,
        matched: set[int],
    ) -> None:
        if not pairs:
            return
        rows = [r for r, _ in pairs]
        cols = [c for _, c in pairs]
        matched_boxes = boxes[cols]
        mean, cov = kalman.update(self._mean[rows], self._cov[rows], matched_boxes)
        self._mean[rows], self._cov[rows] = mean, cov
        centres = (matched_boxes[:, 0:2] + matched_boxes[:, 2:4]) / 2
        for k, (r, c) in enumerate(pairs):
            state = self._tracks[r]
            state.box = matched_boxes[k].copy()
            state.score = float(scores[c])
            state.peak = max(state.peak, state.score)
            state.last_seen = t
            if state.score >= self.config.high:
                state.confident_at = t
            state.hits += 1
            dx, dy = centres[k] - state.origin
            state.moved = max(state.moved, float((dx * dx + dy * dy) ** 0.5))
            matched.add(r)

    def _start(self, box: F64, score: float, t: float) -> _State:
        self._next_key += 1
        return _State(
            key=self._next_key - 1,
            box=box.copy(),
            score=score,
            peak=score,
            since=t,
            last_seen=t,
            confident_at=t,
            origin=(box[0:2] + box[2:4]) / 2,
        )

    def _confirm_if_due(self, state: _State, first: bool) -> None:
        if state.id:
            return
        cfg = self.config
        height = max(float(state.box[3] - state.box[1]), 1.0)
        convincing = state.peak >= cfg.confirm_score or state.moved >= cfg.confirm_motion * height
        # On the first frame (a start, or after the source came back) a confident
        # person is someone already there, not a flicker to wait out.
        if (first and state.peak >= cfg.confirm_score) or (
            state.hits >= cfg.min_hits and convincing
        ):
            state.id = self._next_id
            self._next_id += 1
            self.stats.confirmed += 1


def buffered_iou(a: F64, grow_a: F64, b: F64, grow_b: float) -> F64:
    """IoU of boxes ``a`` (each grown by its own fraction) against ``b`` (grown by one)."""
    return pairwise_iou(_grow(a, grow_a), _grow(b, np.full(b.shape[0], grow_b)))


def _grow(boxes: F64, grow: F64) -> F64:
    w = (boxes[:, 2] - boxes[:, 0]) * grow
    h = (boxes[:, 3] - boxes[:, 1]) * grow
    return np.stack([boxes[:, 0] - w, boxes[:, 1] - h, boxes[:, 2] + w, boxes[:, 3] + h], axis=1)


__all__ = ["Tracker", "TrackerConfig", "TrackerStats", "buffered_iou", "can_follow"]
