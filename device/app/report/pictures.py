"""The report's latest pictured events: a small thumbnail of each, embedded, newest first.

A run with ``--snapshots DIR`` logs a ``snapshot`` event for each picture it wrote; the
event names the file only. The folder is the one ``lookout report --snapshots DIR``
gives, else the one the run's own ``run`` event says it wrote to (a relative folder is
taken from the current directory, as the run took it). The last ``MAX_PICTURES`` are
shown, each scaled down to ``THUMB_WIDTH`` pixels and embedded as a data URI, so the
report stays one file of a few hundred KB; a file that is not there (pruned by the
folder's cap, moved, another machine) is said as missing, never a broken image.
"""

from __future__ import annotations

import html
import time
from base64 import b64encode
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device.app.report.data import Timeline
from device.outputs.pictures.files import read_picture, thumbnail
from device.outputs.pictures.latest import caption

MAX_PICTURES = 24
THUMB_WIDTH = 240


@dataclass(frozen=True)
class PicturedEvent:
    """One pictured event as the report shows it."""

    when: str  # on the report's axis, as people read it
    caption: str
    file: str
    folder: Path | None  # where it was looked for (None: the log does not say)
    thumbnail: bytes | None  # None: not there (or not a picture)


def _folder_of(info: dict[str, Any] | None) -> Path | None:
    config = (info or {}).get("config")
    folder = config.get("snapshots") if isinstance(config, dict) else None
    return Path(folder) if isinstance(folder, str) and folder else None


def _moment(timeline: Timeline, t: float) -> str:
    """A moment as people read it: the clock time for camera runs, else seconds."""
    origin = timeline.wall_origin
    if origin is not None:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(origin + t))
    return f"{t:.1f} s"


def latest_pictures(
    timeline: Timeline, folder: Path | None = None, limit: int = MAX_PICTURES
) -> tuple[list[PicturedEvent], int]:
    """The last ``limit`` pictured events of the timeline's runs, newest first, and how
    many the log has in all. ``folder``: where the pictures are (None: each run's own).
    Blocking: reads and scales the files."""
    found: list[tuple[float, dict[str, Any], Path | None]] = []
    for run in timeline.runs:
        where = folder if folder is not None else _folder_of(run.info)
        for event in run.events:
            if event["type"] == "snapshot" and isinstance(event.get("file"), str):
                found.append((run.time(event) + run.offset, event, where))
    found.sort(key=lambda item: item[0])
    pictures = []
    for t, event, where in reversed(found[-limit:]):
        jpeg = read_picture(where, event["file"]) if where is not None else None
        small = thumbnail(jpeg, THUMB_WIDTH) if jpeg is not None else None
        pictures.append(
            PicturedEvent(_moment(timeline, t), caption(event), event["file"], where, small)
        )
    return pictures, len(found)


def pictures_html(pictures: list[PicturedEvent], total: int) -> str:
    """The report's "Latest events" section (nothing for a log without pictures)."""
    if not pictures:
        return ""
    esc = html.escape
    rows = []
    for p in pictures:
        if p.thumbnail is not None:
            data = b64encode(p.thumbnail).decode()
            shown = f'<img alt="{esc(p.caption)}" src="data:image/jpeg;base64,{data}">'
        elif p.folder is None:
            shown = (
                f'<span class="missing">picture {esc(p.file)}: its folder is not in the log '
                "(give it with --snapshots DIR)</span>"
            )
        else:
            shown = (
                f'<span class="missing">picture missing: {esc(p.file)} is not in '
                f"{esc(str(p.folder))}</span>"
            )
        rows.append(f"<tr><td>{esc(p.when)}</td><td>{esc(p.caption)}</td><td>{shown}</td></tr>")
    of = f"the last {len(pictures)} of {total}" if total > len(pictures) else f"{total}"
    return (
        f"<h2>Latest events</h2>\n<p>Pictured events ({of}), newest first.</p>\n"
        '<table id="pictures"><tr><th>time</th><th>event</th><th>picture</th></tr>\n'
        + "\n".join(rows)
        + "</table>\n"
    )


__all__ = ["MAX_PICTURES", "THUMB_WIDTH", "PicturedEvent", "latest_pictures", "pictures_html"]
