"""Where events go besides the SQLite log: the console and a JSON-lines file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Protocol, TextIO

from live.events import (
    ConnectionState,
    Emission,
    ErrorEvent,
    Event,
    ModelText,
    StreamStarted,
    StreamStopped,
    ToolCall,
    Transcript,
)


class EventSink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class JsonlSink:
    """One JSON object per line: ``{"type": ..., "t": seconds since start, ...}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("a", encoding="utf-8", buffering=1)

    def write(self, event: Event) -> None:
        if event.type == "model_audio":
            return  # bytes belong to a player, not a log
        self._file.write(json.dumps(event.to_dict(), separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._file.close()


def _fmt_t(t: float) -> str:
    return f"[{t:7.1f}s]"


class ConsoleSink:
    """Human-readable lines, plus a progress line when replaying a file on a terminal."""

    def __init__(self, out: TextIO = sys.stdout, *, verbose: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self._progress_shown = False

    def _line(self, text: str) -> None:
        if self._progress_shown:
            self.out.write("\r\x1b[2K")
            self._progress_shown = False
        self.out.write(text + "\n")
        self.out.flush()

    def progress(self, done_s: float, total_s: float | None, count: int | None) -> None:
        if not self.tty:
            return
        people = "-" if count is None else str(count)
        if total_s:
            share = min(1.0, max(0.0, done_s / total_s))
            bar = "#" * int(share * 30)
            text = f"  [{bar:<30}] {done_s:6.1f}/{total_s:.1f}s  people: {people}"
        else:
            text = f"  {done_s:8.1f}s  people: {people}"
        self.out.write("\r\x1b[2K" + text)
        self.out.flush()
        self._progress_shown = True

    def write(self, event: Event) -> None:
        text = self.describe(event)
        if text is not None:
            self._line(f"{_fmt_t(event.t)} {text}")

    def describe(self, event: Event) -> str | None:
        data: dict[str, Any] = event.to_dict()
        if isinstance(event, ModelText):
            return f"model: {event.text}"
        if isinstance(event, Transcript) and event.direction == "output":
            return f"model (spoken): {event.text}"
        if event.type == "count":
            previous = data.get("previous")
            was = "" if previous is None else f" (was {previous})"
            return f"count: {data['count']}{was}  at {data['t_media']:.1f}s of the source"
        if event.type == "source_state":
            reason = f": {data['reason']}" if data.get("reason") else ""
            return f"source {data['source']} {data['state']}{reason}"
        if isinstance(event, ErrorEvent):
            where = f" [{event.where}]" if event.where else ""
            return f"error{where}: {event.message}"
        if isinstance(event, ConnectionState) and event.state in {
            "connected",
            "disconnected",
            "reconnecting",
            "failed",
        }:
            reason = f": {event.reason}" if event.reason else ""
            return f"model connection {event.state}{reason}"
        if isinstance(event, StreamStarted):
            return f"{event.name} started (call {event.id})"
        if isinstance(event, StreamStopped):
            return f"{event.name} stopped: {event.reason} ({event.emissions} emissions)"
        if self.verbose and isinstance(event, ToolCall | Emission):
            return json.dumps(data)
        return None

    def close(self) -> None:
        if self._progress_shown:
            self.out.write("\n")
            self.out.flush()
