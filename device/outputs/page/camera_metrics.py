"""Each camera's series on ``/metrics``: its count, lines, zones, frames and detector, by name.

Every series here has a ``camera`` label (``main`` on a device that names none): a
query that adds them up (``sum(lookout_people)``) reads a device of one camera as it
always did. An unknown count is left out, never reported as 0; so is an unknown
zone's count, and a rate not measured. Line crossings are counters for the run: they
stay while a camera's source is down (nothing is counted then, nothing is lost).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from device.feeds.runner import SourceState
from device.outputs.camera_state import CameraState

SOURCE_STATES = tuple(state.value for state in SourceState)
Read = Callable[[CameraState], float | None]

# name, help, what it reads of a camera (None: left out for that camera)
COUNTERS: tuple[tuple[str, str, Read], ...] = (
    ("lookout_frames_read", "Frames read from the source",
     lambda c: c.camera.capture.stats.frames_read),
    ("lookout_frames_sampled", "Frames kept by the sampler",
     lambda c: c.camera.capture.stats.frames_sampled),
    ("lookout_frames_detected", "Frames the detector ran on",
     lambda c: c.camera.perception.stats.detected),
    ("lookout_frames_gated", "Frames not detected because nothing moved (motion gate)",
     lambda c: c.camera.perception.stats.gated),
    ("lookout_frames_undecoded", "Frames skipped without decoding them (not sampled)",
     lambda c: c.camera.capture.stats.frames_undecoded),
    ("lookout_detector_errors", "Frames the detector could not use",
     lambda c: c.camera.perception.stats.errors),
    ("lookout_count_changes", "Changes of the people count", lambda c: c.count_changes),
    ("lookout_track_seconds", "Time spent tracking and updating lines and zones",
     lambda c: c.camera.perception.stats.track_ms_total / 1000.0),
    ("lookout_tracks_confirmed", "Tracks confirmed as people (ids given)",
     lambda c: _tracker(c, "confirmed")),
    ("lookout_tracks_removed", "Tracks ended (left, or never confirmed)",
     lambda c: _tracker(c, "removed")),
)  # fmt: skip
GAUGES: tuple[tuple[str, str, Read], ...] = (
    ("lookout_people", "People in view (the camera's count)", lambda c: c.count),
    ("lookout_people_raw", "People the detector saw in the last frame", lambda c: c.raw),
    ("lookout_camera_counting", "1 while the camera counts (its source runs, its count known)",
     lambda c: float(c.health().ok)),
    ("lookout_detections_per_second", "Detector runs/s, last 10 s",
     lambda c: c.detections_per_s()),
    ("lookout_detect_fps", "Detections a second the camera asks for",
     lambda c: c.camera.detect_fps),
    ("lookout_detect_fps_achieved",
     "Detections a second the camera got while counting (detected or held by the motion "
     "gate), over the last 10 s; short of lookout_detect_fps: the detector cannot keep up",
     lambda c: c.camera.achieved_fps),
    ("lookout_detector_behind", "1 while the shared detector does not keep up with the camera",
     lambda c: float(c.camera.behind)),
    ("lookout_decode_seconds_mean", "Mean decode time of a frame",
     lambda c: None if c.camera.decode_ms is None else c.camera.decode_ms / 1000),
    ("lookout_source_fps", "The source's frame rate (a camera's, as it gave it)",
     lambda c: c.camera.source_fps),
    ("lookout_track_seconds_mean", "Mean tracking time (with lines and zones) per detected frame",
     lambda c: c.camera.perception.stats.track_ms_mean / 1000.0),
)  # fmt: skip


def _tracker(camera: CameraState, what: str) -> float | None:
    tracker = camera.camera.perception.tracker
    return None if tracker is None else float(getattr(tracker.stats, what))


def camera_metrics(cameras: Sequence[CameraState]) -> Iterable[Metric]:
    """Every camera's series, a family per name with a sample per camera."""
    for kinds, make in ((COUNTERS, CounterMetricFamily), (GAUGES, GaugeMetricFamily)):
        for name, documentation, read in kinds:
            family = make(name, documentation, labels=["camera"])
            for camera in cameras:
                value = read(camera)
                if value is not None:  # an unknown count is left out, not reported as 0
                    family.add_metric([camera.name], value)
            if family.samples:
                yield family
    states = GaugeMetricFamily(
        "lookout_source_state",
        "Frame source state (1 for the current one)",
        labels=["camera", "state"],
    )
    for camera in cameras:
        current = camera.camera.source_runner.state.value
        for state in SOURCE_STATES:
            states.add_metric([camera.name, state], 1.0 if state == current else 0.0)
    yield states
    yield from _scene_metrics(cameras)


def _scene_metrics(cameras: Sequence[CameraState]) -> Iterable[Metric]:
    """Each camera's lines' crossings by direction, its zones' people and dwellers."""
    crossings = CounterMetricFamily(
        "lookout_line_crossings",
        "People who crossed a named line, by direction (in: to its positive side)",
        labels=["camera", "line", "direction"],
    )
    for camera in cameras:
        for name, totals in camera.lines.items():
            crossings.add_metric([camera.name, name, "in"], totals.entered)
            crossings.add_metric([camera.name, name, "out"], totals.exited)
    if crossings.samples:
        yield crossings
    families = (
        GaugeMetricFamily(
            "lookout_zone_people", "People in a named zone", labels=["camera", "zone"]
        ),
        GaugeMetricFamily(
            "lookout_zone_dwelling",
            "People in a named zone for longer than its dwell time",
            labels=["camera", "zone"],
        ),
        GaugeMetricFamily(
            "lookout_zone_longest_stay_seconds",
            "Longest stay of someone in a named zone now",
            labels=["camera", "zone"],
        ),
    )
    people, dwelling, longest = families
    for camera in cameras:
        if camera.count is None:
            continue  # every zone unknown with the count: left out, like lookout_people
        for name, zone in camera.zones.items():
            if zone.people is None:
                continue
            people.add_metric([camera.name, name], float(zone.people))
            dwelling.add_metric([camera.name, name], float(zone.dwelling))
            longest.add_metric([camera.name, name], zone.longest_s)
    if people.samples:
        yield from families


__all__ = ["COUNTERS", "GAUGES", "SOURCE_STATES", "camera_metrics"]
