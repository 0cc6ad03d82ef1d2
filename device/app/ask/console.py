"""What ``lookout ask`` shows: the answer on stdout, the way to it on stderr."""

from __future__ import annotations

import json
from typing import TextIO

from device.events import SourceStateEvent
from live.events import ErrorEvent, Event, JobProgress, JobUpdate, ModelText, ToolCall, ToolResult
from live.util.printable import printable, printable_lines


class AskConsole:
    """The answer on ``out``; what happened on the way on ``err`` (a progress bar on a tty)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.tty = bool(getattr(err, "isatty", lambda: False)())
        self._bar_shown = False
        self._last_tenth: dict[str, int] = {}

    def note(self, text: str) -> None:
        """A line about how the question is answered (stderr: the answer stays alone on
        stdout)."""
        self._err_line(text)

    def _err_line(self, text: str) -> None:
        self._clear_bar()
        # Tool names, call ids and errors come from the model: shown, never obeyed.
        self.err.write(printable(text) + "\n")
        self.err.flush()

    def _clear_bar(self) -> None:
        if self._bar_shown:
            self.err.write("\r\x1b[2K")
            self._bar_shown = False

    def write(self, event: Event) -> None:
        if isinstance(event, ModelText):
            self._clear_bar()
            # The answer keeps its lines; escape sequences, lone CRs and bidi overrides
            # are shown escaped (the event logs keep the text exact).
            self.out.write(printable_lines(event.text) + "\n")
            self.out.flush()
        elif isinstance(event, ToolCall):
            args = ", ".join(f"{k}={json.dumps(v)}" for k, v in event.args.items())
            self._err_line(f"-> {event.name}({args})  [{event.id}]")
        elif isinstance(event, ToolResult):
            text = json.dumps(event.response, separators=(",", ":"))
            if len(text) > 160:
                text = text[:157] + "..."
            self._err_line(f"<- {event.name} {text}")
        elif isinstance(event, JobUpdate):
            detail = f": {event.error}" if event.error else ""
            self._err_line(f"job {event.job_id} ({event.name}) {event.state}{detail}")
        elif isinstance(event, JobProgress):
            self._progress(event)
        elif isinstance(event, ErrorEvent):
            where = f" [{event.where}]" if event.where else ""
            self._err_line(f"error{where}: {event.message}")
        elif isinstance(event, SourceStateEvent) and event.state in {"reconnecting", "failed"}:
            reason = f": {event.reason}" if event.reason else ""
            self._err_line(f"source {event.source} {event.state}{reason}")

    def _progress(self, event: JobProgress) -> None:
        share = event.fraction if event.fraction is not None else 0.0
        if self.tty:
            bar = "#" * int(share * 30)
            self.err.write(f"\r\x1b[2K  [{bar:<30}] {share:4.0%} {printable(event.message)}")
            self.err.flush()
            self._bar_shown = True
            return
        tenth = int(share * 10)
        if tenth > self._last_tenth.get(event.job_id, -1):
            self._last_tenth[event.job_id] = tenth
            self._err_line(f"job {event.job_id}: {share:.0%} {event.message}")

    def close(self) -> None:
        self._clear_bar()
        self.err.flush()


__all__ = ["AskConsole"]
