"""Log records a person watching ``lookout run`` should see, said as console lines.

The console (stdout) says what happens as ``[   12.3s] ...``; Python's log (stderr) says
``2026-12-02 06:53:31,406 WARNING lookout.status: ...``. A warning someone should act on
(the page open to the network without a token, MQTT not publishing a name, a frame that
could not be used) then reads like nothing else on the screen, and a terminal shows the
two streams interleaved in a different format. ``ConsoleLogs`` is a filter on the stderr
log handler (``device/cli.py``): while a run's console is open, a record at warning or
above becomes that console's line (``warning: ...``, ``error: ...``; another library's
record names its logger) instead of a log line. Below warning (``-v``, ``--log-level
info``) is a log, asked for as such, and stays on stderr; then every record stays there
too, so that log is whole.

A record may come from any thread (a camera reader, the MQTT client, a log writer): the
console is written by the event loop's thread only, so a record from another thread is
handed to the loop (``call_soon_threadsafe``); before the loop runs, and after the console
closed, records go to stderr as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from live.util.redact import short_error, strip_credentials


def console_text(record: logging.LogRecord) -> str:
    """``warning: <message>`` (``error: ``), as the console's own warnings read."""
    level = "warning" if record.levelno < logging.ERROR else "error"
    own = record.name == "lookout" or record.name.startswith("lookout.")
    # Lookout's messages name their subject ("MQTT: ...", "status server ..."); another
    # library's would not say whose they are without its logger's name.
    who = "" if own else f"{record.name}: "
    text = strip_credentials(record.getMessage())
    if record.exc_info and record.exc_info[1] is not None:
        text += f" ({short_error(record.exc_info[1])})"  # one line: the traceback is -v's
    return f"{level}: {who}{text}"


class ConsoleLogs(logging.Filter):
    """On the stderr handler: records at warning and above go to the attached console."""

    def __init__(self, *, keep_on_stderr: bool = False) -> None:
        super().__init__()
        self.keep_on_stderr = keep_on_stderr
        self._say: Callable[[str], None] | None = None
        self._thread: int | None = None  # the thread the console is written from
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, say: Callable[[str], None]) -> None:
        """From now on warnings are ``say``'s lines; called on the thread the run's loop
        will run on (``build_app``, then ``anyio.run`` on the same thread)."""
        self._say = say
        self._thread = threading.get_ident()

    def detach(self) -> None:
        self._say = None
        self._loop = None

    # A bus subscriber: its first event (``run``) comes on the running loop, which is
    # where records from other threads are then sent; closing the bus detaches it.
    def write(self, event: Any) -> None:
        if self._loop is None and threading.get_ident() == self._thread:
            with contextlib.suppress(RuntimeError):  # published before the loop ran
                self._loop = asyncio.get_running_loop()

    def close(self) -> None:
        self.detach()

    def filter(self, record: logging.LogRecord) -> bool:
        say = self._say
        if say is None or record.levelno < logging.WARNING:
            return True
        text = console_text(record)
        if threading.get_ident() == self._thread:
            say(text)
        else:
            loop = self._loop
            if loop is None or loop.is_closed():
                return True  # no loop to say it on (yet, or any more): the log says it
            try:
                loop.call_soon_threadsafe(say, text)
            except RuntimeError:  # the loop closed meanwhile
                return True
        return self.keep_on_stderr


__all__ = ["ConsoleLogs", "console_text"]
