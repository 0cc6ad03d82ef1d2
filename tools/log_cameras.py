"""Which cameras of the log a ``lookout ask`` question is about (``tools/log_questions.py``).

A question may name a place: a camera (``door``), or a line or zone of one (``post``,
``queue``; two cameras may both have one of that name). ``scopes`` turns it into the
cameras to answer for, each with its share of the log's runs (its events and the device's,
its run events made its own: ``device/logged_cameras.py``):

* a log of one camera that has no name (``main``, and every log from before cameras had
  names): the log as it is, a place it does not know ignored (as before cameras);
* a place that is a camera: that camera; a line or zone: the cameras that have it;
* no place, on a log of several cameras: each camera, and the answer in total;
* a place none of the cameras knows, on a log of named cameras: refused in one line that
  names the cameras (``UnknownPlace``, which ``lookout ask`` says and exits 4 on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from device.logged_cameras import CAMERA_TYPES, camera_info, named, run_cameras
from live.tool import ToolUnavailable


class UnknownPlace(ToolUnavailable):
    """The question names a place none of the log's cameras has; one line, said as is."""


class LoggedRun(Protocol):
    """A run of the log (``tools/log_periods.py:LoggedRun``, a dataclass)."""

    info: dict[str, Any]
    events: list[dict[str, Any]]


Run = TypeVar("Run", bound=LoggedRun)


@dataclass
class Scope(Generic[Run]):
    """One camera's share of the log to answer over (``name`` None: the whole log)."""

    name: str | None
    runs: list[Run]


def log_cameras(runs: list[Run]) -> list[str]:
    """The cameras of the log's runs, in the order they first appear."""
    names: list[str] = []
    for run in runs:
        found = run_cameras(run.info) + [
            str(e["camera"])
            for e in run.events
            if e.get("type") in CAMERA_TYPES and isinstance(e.get("camera"), str)
        ]
        names.extend(name for name in found if name not in names)
    return names


def camera_runs(runs: list[Run], name: str) -> list[Run]:
    """Camera ``name``'s share of ``runs``: the runs it was in, with its events only."""
    return [
        dataclasses.replace(  # type: ignore[type-var]
            run,
            info=camera_info(run.info, name),
            events=[
                e
                for e in run.events
                if e.get("type") not in CAMERA_TYPES or e.get("camera") == name
            ],
        )
        for run in runs
        if name in run_cameras(run.info)
        or any(e.get("camera") == name for e in run.events if e.get("type") in CAMERA_TYPES)
    ]


def _has_place(runs: list[Run], place: str) -> bool:
    """Whether a line or zone of this name is in ``runs`` (configured or logged)."""
    for run in runs:
        config = run.info.get("config") or {}
        if place in (config.get("lines") or {}) or place in (config.get("zones") or {}):
            return True
        if any(place in (e.get("line"), e.get("zone")) for e in run.events):
            return True
    return False


def scopes(runs: list[Run], place: str) -> list[Scope[Run]]:
    """The cameras a question naming ``place`` ("" for none) is answered for."""
    cameras = log_cameras(runs)
    if not named(cameras):
        return [Scope(None, runs)]
    shares = {name: camera_runs(runs, name) for name in cameras}
    place = place.strip()
    if not place:
        return [Scope(name, share) for name, share in shares.items()]
    if place in shares:
        return [Scope(place, shares[place])]
    having = [Scope(name, share) for name, share in shares.items() if _has_place(share, place)]
    if not having:
        raise _unknown(place, cameras)
    return having


def _unknown(place: str, cameras: list[str]) -> Exception:
    return UnknownPlace(
        f"no camera {place!r} in this log, nor a line or zone of that name "
        f"(cameras: {', '.join(cameras)})"
    )


def each_camera(
    runs: list[Run], place: str, answer: Callable[[list[Run]], dict[str, Any]]
) -> dict[str, Any] | dict[str, dict[str, Any]]:
    """``answer`` over the cameras the question is about: one answer (with its
    ``camera`` where the log names cameras), or each camera's by name (a camera ``answer``
    cannot answer for, e.g. one without lines, left out; none answered: the first reason)."""
    found = scopes(runs, place)
    if len(found) == 1:
        one = answer(found[0].runs)
        return one if found[0].name is None else {"camera": found[0].name, **one}
    answers: dict[str, dict[str, Any]] = {}
    reasons: list[ToolUnavailable] = []
    for scope in found:
        try:
            answers[str(scope.name)] = answer(scope.runs)
        except ToolUnavailable as exc:
            reasons.append(exc)
    if not answers:
        raise reasons[0]
    if len(answers) == 1:  # the one camera that has what was asked (its zones): said as its
        name, one = next(iter(answers.items()))
        return {"camera": name, **one}
    return {"cameras": answers}


__all__ = ["Scope", "UnknownPlace", "camera_runs", "each_camera", "log_cameras", "scopes"]
