"""Perception: the device's eyes, once per sampled frame, in frame order, in one place.

While the source runs, every sampled frame on the detection grid goes through
the person detector (in a worker thread, one inference at a time), the
tracker (``device/vision/tracker.py``: who is who from frame to frame), the presence
rule (``device/vision/presence.py``: who counts as in view now) and the lines and
zones (``device/vision/scene.py``), whatever else is connected. With the motion gate
(``device/vision/motion.py``) a frame on which nothing moved is not detected: the
last detections stand (a ``gated`` percept), and a heartbeat detection every
few seconds checks them. The count is the number of people the presence rule
counts in the frame, recomputed at every frame (nothing holds an old value);
the detector's own number stays in the percept (``raw``) for diagnosis.
The result, a ``Percept``, is published once (``on_percept``: the bus's percept
channel, where the page, the metrics, the snapshots and the session's feed to the
model-facing tools subscribe), with a ``count`` event on every change of the count
for the logs, the console and MQTT.
No consumer of a frame runs the detector again, and ``lookout run``,
``lookout count`` and ``lookout ask`` all perceive through this class.

Frames are *linked* when people can be followed from one to the next: a video
or camera sampled closer together than a track survives unseen. Unrelated
photos (an image folder that is not a time-lapse) and detections too far apart
are not: each frame is then counted on its own (every box at the threshold),
and nothing carries over from the frame before.

This is also the one place that decides whether the count is known: it is
unknown until the first usable frame, and again from ``forget(reason)`` (the
source stopped running, or frames stopped coming) until the next usable frame.
What the count is and who is told of it (percepts, ``count`` events, the count
unknown) is ``device/vision/count_report.py``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import numpy as np

from device.grid import SampleGrid
from device.vision.count_report import CountReport
from device.vision.frame import Frame
from device.vision.motion import MotionConfig, MotionGate
from device.vision.percept import MAIN_CAMERA, Perceived, Percept, Track
from device.vision.presence import PresenceRule, each_detection
from device.vision.scene import Scene, SceneSpec
from device.vision.shared_detector import DetectorFactory, SharedDetector
from device.vision.tracker import Tracker, TrackerConfig, can_follow
from live.events import Event
from models.detections import Detections, Detector

# How long the source may be down (a camera glitch and its reconnect) and everyone still
# be picked up where they were when frames come back, as after an occlusion.
OUTAGE_GRACE_S = 10.0


@dataclass
class PerceptionStats:
    frames_in: int = 0
    detected: int = 0
    skipped_rate: int = 0  # sampled frames off the detection grid
    skipped_stale: int = 0  # frames from before the count was given up (a camera drop)
    errors: int = 0  # frames the detector could not use
    gated: int = 0  # frames on the detection grid not detected: nothing moved (motion gate)
    detect_ms_total: float = 0.0
    track_ms_total: float = 0.0  # the tracker and the lines and zones, on detected frames
    gate_ms_total: float = 0.0  # the motion tests, and holding the scene on gated frames

    @property
    def track_ms_mean(self) -> float:
        return self.track_ms_total / self.detected if self.detected else 0.0

    @property
    def detect_ms_mean(self) -> float:
        return self.detect_ms_total / self.detected if self.detected else 0.0


class Perception:
    """Detection, tracking and counting for one source, and whether its count is known now.

    The count is unknown until the first usable frame, and again whenever the
    source stops running or no frame has come for ``stale_after_s()``
    (``forget``): then a ``count`` event with a null count and the reason goes
    out (and a ``CountUnknown`` where the percepts go), the tracks are dropped,
    and the next usable frame is a new first count.
    """

    def __init__(
        self,
        detector: SharedDetector | Detector | DetectorFactory,
        *,
        detect_fps: float,
        threshold: float = TrackerConfig.high,
        publish: Callable[[Event], None] = lambda event: None,
        on_percept: Callable[[Perceived], None] = lambda percept: None,
        now: Callable[[], float] = time.monotonic,
        scene: SceneSpec | None = None,
        motion: MotionConfig | None = None,
        presence: PresenceRule | None = None,
        photos: bool = False,
        camera: str = MAIN_CAMERA,
    ) -> None:
        """``detector``: the device's shared detector (one model serves every camera), or
        a detector (or its factory) of this perception's own.
        ``threshold``: boxes at or above it are people; a detector run with a lower
        threshold also hands over doubtful ones, which only keep tracks going.
        ``motion``: gate the detector on motion (None: detect every frame on the grid).
        ``photos``: the frames are unrelated photos: each is counted on its own.
        ``camera``: whose frames these are; its percepts, events and unknowns say so.
        """
        if detect_fps <= 0:
            raise ValueError("detect_fps must be positive")
        self.camera = camera
        self.shared = detector if isinstance(detector, SharedDetector) else SharedDetector(detector)
        self.threshold = threshold
        tracker = tracker_config(threshold)
        self.tracker = Tracker(tracker)
        self.scene = Scene(scene or SceneSpec())
        self.photos = photos
        self._tracker_config = tracker
        self._presence_rule = presence or PresenceRule()
        self._set_interval(1.0 / detect_fps)
        self.stats = PerceptionStats()
        # Unrelated frames: nothing moving between them means nothing.
        self.gate = MotionGate(motion) if motion is not None and self.linked else None
        # The last detector output (at the user's threshold, as shown) and its raw number:
        # what a gated frame shows, since nothing moved since.
        self._shown: tuple[Detections, int] = (Detections.empty(), 0)
        self._report = CountReport(
            self.scene,
            publish=publish,
            on_percept=on_percept,
            now=now,
            camera=camera,
        )
        self._slowest_s = 0.0  # recent detector latency, so a slow device is not called stale
        self._seen_t: float | None = None  # media time of the newest frame offered
        self._epoch = 0  # one more at each forget: results begun before it are dropped
        self._forgot_wall = 0.0  # frames read before this (time.time()) are not counted

    def _set_interval(self, interval: float) -> None:
        self.interval = interval
        # Detections further apart than a track survives unseen cannot be linked: nobody
        # would be seen twice in time to be confirmed, and a tracked count would say no
        # one is there. Then, as for unrelated photos, each detection counts on its own.
        self.linked = not self.photos and can_follow(interval, self._tracker_config)
        self.presence = self._presence_rule.for_interval(interval)
        self.grid = SampleGrid(interval)

    def set_rate(self, detect_fps: float) -> None:
        """Detect at ``detect_fps`` from the next frame on (lines drawn on a run that had
        none need the scene's rate); the tracks go on."""
        if detect_fps <= 0:
            raise ValueError("detect_fps must be positive")
        self._set_interval(1.0 / detect_fps)

    async def load(self) -> None:
        """Load the detector now (a missing or broken model file fails here, clearly)."""
        await self.shared.load()

    def current(self) -> Percept | None:
        """The newest percept while the count is known; None while it is not."""
        return self._report.latest

    @property
    def known(self) -> bool:
        return self._report.known

    @property
    def unknown_reason(self) -> str:
        return self._report.unknown_reason

    @property
    def last_at(self) -> float | None:
        """When the newest percept was made (on the ``now`` clock)."""
        return self._report.last_at

    def stale_after_s(self) -> float:
        """How long without a percept before the count is no longer current.

        One detection period plus the time a missed person still counts, with
        room for a detector slower than the period (a Pi 4 takes ~0.4 s a frame)
        and some scheduling slack.
        """
        return max(self.interval, 2 * self._slowest_s) + self.presence.coast_s + 0.5

    def forget(self, reason: str, *, outage: bool = False) -> bool:
        """The count no longer holds: say so once; the next count starts afresh.

        ``outage``: the source is reconnecting or stalled, and may be back in a moment.
        Then the tracks (and with them zone stays and dwell times) are kept: frames
        back within ``OUTAGE_GRACE_S`` pick everyone up where they were, as after an
        occlusion, instead of starting every visit again. The count is unknown
        meanwhile all the same. Returns whether this changed anything (False when
        already unknown).
        """
        self._epoch += 1
        self._forgot_wall = time.time()
        self.grid.reset()
        keep = outage and self.linked
        if not keep:
            self.tracker.reset()
        if self.gate is not None:
            self.gate.reset()  # the next frame is a fresh first count: detected
        scene_events = self.scene.forget(self._seen_t, keep_tracks=keep)
        return self._report.lose(reason, self._seen_t, scene_events)

    def take_slot(self, frame: Frame) -> bool:
        """Takes ``frame``'s slot on the detection grid (``device/grid.py``), advancing the
        grid; False when the frame is off it.

        Every unrelated photo is its own scene: each one offered is looked at.
        """
        return self.grid.take(frame.t_media) or self.photos

    async def process(self, frame: Frame, *, force: bool = False) -> Percept | None:
        """Detect and count ``frame`` if it is due (or ``force``); None when it is off the grid.

        With the motion gate, a due frame on which nothing moved is not detected:
        its percept (``gated``) holds the last detections at this frame's time.
        ``force`` always detects.
        """
        self.stats.frames_in += 1
        self._seen_t = frame.t_media
        if frame.t_wall < self._forgot_wall:
            # Read before the count was given up (still in a buffer): it must not
            # bring an old scene back as the current count.
            self.stats.skipped_stale += 1
            return None
        if frame.cut:
            self._cut(frame.t_media)
        gate = self.gate
        share: float | None = None
        if gate is not None:
            # Every sampled frame, on or off the grid: motion between two detections
            # must count. Well under a millisecond, so on the loop (no thread hop).
            start = time.perf_counter()
            share = gate.observe(frame.image, frame.t_media)
            self.stats.gate_ms_total += (time.perf_counter() - start) * 1000
        if not force and not self.take_slot(frame):
            self.stats.skipped_rate += 1
            return None
        # Only a known count can be held: the first frame, and the first after the count
        # was given up, are always detected (a failed detection re-arms the gate).
        why: str | None = "start"
        if gate is not None and not force and self._report.latest is not None:
            why = gate.decide(frame.t_media)
            if why is None:
                return self._hold(frame, share)
        epoch = self._epoch
        try:
            # Cameras take turns at the one detector; a still one's heartbeat goes after
            # the frames of cameras where something moves (``shared_detector.py``).
            async with self.shared.turn(urgent=why != "heartbeat"):
                detections, detect_ms = await anyio.to_thread.run_sync(
                    self._detect, frame, limiter=self.shared.limiter
                )
        except Exception as exc:
            # One bad inference must not blind the device; a persistent failure is said.
            return self._failed(frame, exc)
        if epoch != self._epoch:
            # The count was given up while this frame was in the detector.
            self.stats.skipped_stale += 1
            return None
        latest = self._report.latest
        if latest is None:
            self._resume(frame.t_media)
        self.stats.detected += 1
        self.stats.detect_ms_total += detect_ms
        self._slowest_s = max(detect_ms / 1000, 0.8 * self._slowest_s)  # decays, follows peaks
        self._report.error_said = False
        held = _keys(latest.people) if latest is not None else None
        track_start = time.perf_counter()
        if not self.linked:
            self.tracker.reset()  # nothing carries over from an unrelated frame
        tracks = self.tracker.update(detections, frame.t_media)
        people = self._people(tracks, frame)
        scene_events = self.scene.update(people, tracks, frame.shape, frame.t_media)
        self.stats.track_ms_total += (time.perf_counter() - track_start) * 1000
        if gate is not None:
            # Other people than the held ones (someone missed, or found): settle it at
            # the full rate, as motion would.
            gate.ran(frame.t_media, changed=held is not None and held != _keys(people))
        detections = detections.at_least(self.threshold)
        self._shown = (detections, len(detections))
        return self._report.perceived(
            frame,
            tracks,
            people,
            scene_events,
            shown=self._shown,
            detect_ms=detect_ms,
            motion=share,
        )

    def _cut(self, t: float) -> None:
        """The source jumped (a replay's next pass began): nobody is followed across it.
        Tracks end; zone visits and dwell end (each zone afresh from this frame); line
        totals stay; the count stands until this frame, looked at now, gives the next."""
        self.tracker.reset()
        self.grid.reset()
        if self.gate is not None:
            self.gate.reset()
        self._report.said(self.scene.forget(t))
        self._report.look_afresh()

    def _people(self, tracks: tuple[Track, ...], frame: Frame) -> tuple[Track, ...]:
        if not self.linked:
            return each_detection(tracks, self.threshold)
        return self.presence.people(tracks, frame.t_media, frame.shape)

    def _resume(self, t: float) -> None:
        """The first frame since the count was given up: after a short outage the tracks
        go on, the time the source was down not counted; after a longer one, afresh."""
        last = self.tracker.last_t
        if last is None:
            return
        gap = t - last
        if 0 <= gap <= OUTAGE_GRACE_S:
            self.tracker.skip(max(0.0, gap - self.interval))
            return
        self.tracker.reset()
        self.scene.forget(None)  # visits end: the zones were unknown already

    def _hold(self, frame: Frame, share: float | None) -> Percept:
        """Nothing moved: everyone the tracker saw last stands where they were, at this time.

        The tracker is given the boxes of the tracks it saw in the last frame,
        with their scores (never an empty frame, which would lose everyone):
        what a detector would find again in a scene where nothing moved. Their
        tracks stay alive and seen, their Kalman velocity settles to zero, a
        tentative one is confirmed or not as it would be on real frames, lost
        ones run out. The lines see nobody move (no crossing); the zones' stays
        and dwell times go on with the media time; the count holds.
        """
        start = time.perf_counter()
        self.stats.gated += 1
        seen = [t for t in self.tracker.tracks if t.seen]
        boxes = np.asarray([t.box for t in seen], np.float32).reshape(-1, 4)
        scores = np.asarray([t.score for t in seen], np.float32)
        tracks = self.tracker.update(Detections(boxes, scores), frame.t_media)
        people = self._people(tracks, frame)
        scene_events = self.scene.update(people, tracks, frame.shape, frame.t_media)
        percept = self._report.perceived(
            frame,
            tracks,
            people,
            scene_events,
            shown=self._shown,
            detect_ms=0.0,
            motion=share,
            gated=True,
        )
        self.stats.gate_ms_total += (time.perf_counter() - start) * 1000
        return percept

    def _detect(self, frame: Frame) -> tuple[Detections, float]:
        detector = self.shared.get()
        start = time.perf_counter()
        detections = detector.detect(frame.image)
        return detections, (time.perf_counter() - start) * 1000

    def _failed(self, frame: Frame, exc: Exception) -> Percept:
        self.stats.errors += 1
        if self.gate is not None:
            # Nothing is known to hold: retry at the full rate, as if it moved.
            self.gate.ran(frame.t_media, changed=True)
        return self._report.failed(frame, exc)


def tracker_config(threshold: float) -> TrackerConfig:
    """The tracker for a detector threshold: boxes at it are people; boxes down to the
    tracker's low score (or the threshold, when lower) only keep tracks going."""
    return TrackerConfig(high=threshold, low=min(TrackerConfig.low, threshold))


def _keys(people: tuple[Track, ...]) -> frozenset[int]:
    """The people the detector saw in the frame (not those the count carries over a miss)."""
    return frozenset(t.key for t in people if t.seen)


__all__ = ["Perception", "PerceptionStats", "tracker_config"]
