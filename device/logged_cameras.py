"""Which camera each event of a log is of, and one camera's share of a log.

Every camera's event (``device.events.CameraEvent``: a count, a crossing, a zone...)
carries its camera. A log from before cameras had names had one camera, ``main``: its
camera events are read as main's (``with_cameras``), in JSON lines and SQLite alike.
The device's own events (the run, the session's calls, the model's words) are of no
camera: each camera's share of a run (``camera_view``) has them, with the run event
made the camera's (its source, its lines and zones).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from device.vision.percept import MAIN_CAMERA

# The types of device.events.CameraEvent (tests/ops/test_report_cameras.py keeps them
# the same): a log is read without importing the events it holds.
CAMERA_TYPES = frozenset(
    {"count", "crossing", "zone", "dwell", "snapshot", "scene", "source_state", "capture_stats"}
)


def with_cameras(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events``, each camera event of an older log (no ``camera``) made main's."""
    for event in events:
        if event.get("type") in CAMERA_TYPES and not isinstance(event.get("camera"), str):
            event["camera"] = MAIN_CAMERA
    return events


def run_cameras(info: dict[str, Any] | None) -> list[str]:
    """The cameras of a run, by its run event (one from before cameras had names: main)."""
    cameras = (info or {}).get("cameras")
    if isinstance(cameras, dict) and cameras:
        return [str(name) for name in cameras]
    return [MAIN_CAMERA]


def cameras_in(events: Iterable[dict[str, Any]]) -> list[str]:
    """The cameras of a log's runs and events, in the order they first appear.

    A question's run (``lookout ask``) names no camera of the device's."""
    names: list[str] = []
    for event in events:
        if event.get("type") == "run":
            found = run_cameras(event) if event.get("command", "run") == "run" else []
        else:
            camera = event.get("camera")
            found = (
                [camera] if event.get("type") in CAMERA_TYPES and isinstance(camera, str) else []
            )
        names.extend(name for name in found if name not in names)
    return names


def named(cameras: list[str]) -> bool:
    """Whether a log's cameras are told apart: more than one, or one given a name."""
    return len(cameras) > 1 or (len(cameras) == 1 and cameras[0] != MAIN_CAMERA)


def camera_info(info: dict[str, Any], name: str) -> dict[str, Any]:
    """A run event as camera ``name`` had the run: its source and whether it is live, and
    the configuration as the camera saw it (the device's, its own settings over them)."""
    cameras = info.get("cameras")
    own = cameras.get(name) if isinstance(cameras, dict) else None
    own = own if isinstance(own, dict) else {}
    config = info.get("config")
    if isinstance(config, dict):
        tables = config.get("cameras")
        table = tables.get(name) if isinstance(tables, dict) else None
        config = {**config, **(table if isinstance(table, dict) else {}), "cameras": {}}
    return {
        **info,
        "source": own.get("source", info.get("source")),
        "live": own.get("live", info.get("live")),
        "config": config,
        "camera": name,
    }


def camera_view(events: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Camera ``name``'s share of a log: its events and the device's own, of the runs it
    was in (their run events made its, ``camera_info``), in order."""
    view: list[dict[str, Any]] = []
    inside = True  # a log without run events: all of it
    for event in events:
        kind = event.get("type")
        if kind == "run":
            inside = name in run_cameras(event)
            if inside:
                view.append(camera_info(event, name))
        elif kind in CAMERA_TYPES:
            if event.get("camera") == name:
                view.append(event)
        elif inside:
            view.append(event)
    return view


__all__ = [
    "CAMERA_TYPES",
    "camera_info",
    "camera_view",
    "cameras_in",
    "named",
    "run_cameras",
    "with_cameras",
]
