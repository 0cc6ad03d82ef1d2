"""A log of two cameras (issue 34), written through the real sinks: what a report and a
question over the log are checked against, to the event.

``two_cameras()`` is a run of two recordings replayed together, ``door`` and ``till``,
each with a line named ``post`` (the same name, each the camera's own); the till also
has a zone ``queue``. What a person would count in it (media seconds):

* door: 2 people from 1 s, 4 from 5 s, 1 from 9 s, ended at 10 s; its post: in at 2 and
  3 s, out at 6 s;
* till: 1 from 1 s, 3 from 4 s, 0 from 8 s, ended at 10 s; its post: out at 4.5 s; its
  queue: 1 from 1 s, 2 from 4 s, 0 from 8 s, one dwell at 7 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from device.events import (
    CountChanged,
    DwellPassed,
    LineCrossed,
    RunStarted,
    SourceStateEvent,
    ZoneCount,
)
from device.outputs.sinks import JsonlSink
from live.events import Event, ModelText
from live.store.eventlog import SQLiteEventLog

POST = {"points": [[0.56, 0.73], [0.56, 0.21]]}
QUEUE = {"points": [[0.1, 0.3], [0.5, 0.3], [0.5, 0.9], [0.1, 0.9]]}
STARTED_WALL = 1_796_000_000.0  # 2026-11-30 00:53:20 UTC
# Each camera's own settings, as a run event's configuration has them.
CAMERAS = {
    "door": {"source": "door.avi", "lines": {"post": POST}},
    "till": {
        "source": "till.avi",
        "lines": {"post": POST},
        "zones": {"queue": QUEUE},
        "dwell": 5.0,
    },
}


def _count(camera: str, t: float, n: int, previous: int | None) -> CountChanged:
    return CountChanged(t=t, count=n, previous=previous, raw=n, t_media=t, camera=camera)


def _cross(camera: str, t: float, way: str, totals: list[int]) -> LineCrossed:
    totals[0 if way == "in" else 1] += 1
    return LineCrossed(t=t, line="post", direction=way, track=int(t * 10), t_media=t,
                       total_in=totals[0], total_out=totals[1], camera=camera)  # fmt: skip


def _queue(t: float, people: int, previous: int | None) -> ZoneCount:
    return ZoneCount(t=t, zone="queue", people=people, previous=previous, dwelling=0,
                     longest_s=0.0, t_media=t, camera="till")  # fmt: skip


def two_cameras(run_id: str = "cams0001", started_wall: float = STARTED_WALL) -> list[Event]:
    door: list[int] = [0, 0]
    till: list[int] = [0, 0]
    return [
        RunStarted(
            t=0.0,
            run_id=run_id,
            started="2026-11-30T10:00:00+0000",
            started_wall=started_wall,
            source="door.avi",
            live=False,
            model="local",
            config={"lines": {}, "zones": {}, "dwell": 30.0, "cameras": CAMERAS},
            cameras={
                "door": {"source": "door.avi", "live": False},
                "till": {"source": "till.avi", "live": False},
            },
        ),
        SourceStateEvent(t=0.1, source="door.avi", state="running", camera="door"),
        SourceStateEvent(t=0.1, source="till.avi", state="running", camera="till"),
        _count("door", 1.0, 2, None),
        _count("till", 1.0, 1, None),
        _queue(1.0, 1, None),
        _cross("door", 2.0, "in", door),
        _cross("door", 3.0, "in", door),
        _count("till", 4.0, 3, 1),
        _queue(4.0, 2, 1),
        _cross("till", 4.5, "out", till),
        _count("door", 5.0, 4, 2),
        ModelText(t=5.0, text="door: 4 people in view (was 2)."),
        _cross("door", 6.0, "out", door),
        DwellPassed(t=7.0, zone="queue", track=8, seconds=6.0, t_media=7.0, camera="till"),
        _count("till", 8.0, 0, 3),
        _queue(8.0, 0, 2),
        _count("door", 9.0, 1, 4),
        SourceStateEvent(t=10.0, source="door.avi", state="ended", camera="door"),
        SourceStateEvent(t=10.0, source="till.avi", state="ended", camera="till"),
    ]


def write_logs(folder: Path, events: list[Event], session: str = "cams0001") -> tuple[Path, Path]:
    """``events`` through the real JSON-lines sink and SQLite event log: (jsonl, sqlite)."""
    jsonl, db = folder / "cams.jsonl", folder / "cams.sqlite"
    sink = JsonlSink(jsonl)
    log = SQLiteEventLog(db, session=session)
    for event in events:
        sink.write(event)
        log.record(event)
    sink.close()
    log.close()
    return jsonl, db


def without_cameras(events: list[Event]) -> list[dict[str, Any]]:
    """``events`` as a log from before cameras had names wrote them: no ``camera``."""
    old = []
    for event in events:
        data = event.to_dict()
        data.pop("camera", None)
        old.append(data)
    return old


def write_old_jsonl(path: Path, events: list[Event]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in without_cameras(events)))
    return path
