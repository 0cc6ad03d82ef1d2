"""The ``lookout`` command as installed: a signal before a command has started ends it in
one line, never a traceback, and leaves nothing behind.

Ctrl-C (SIGINT) or SIGTERM while Python loads the device and the command checks its
settings, opens its source and binds its ports raises ``KeyboardInterrupt`` here (SIGTERM
too: by default it would end the process with files half-made); a command undoes what it
made before its run began (``device/files/made.py``) and lets it through. Once a run has
begun, its own handlers stop it cleanly (exit codes: README).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C


_interrupted = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        from device.cli import main as command

        return command()
    except BaseException as exc:
        # Raised in a native module's import, the interrupt may arrive as another error
        # (onnxruntime: "ImportError: initialization failed"): the signal is what it was.
        if not (_interrupted or isinstance(exc, KeyboardInterrupt)):
            raise
        from device.files.made import undo_all

        undo_all()
        print("lookout: interrupted while starting; nothing was written", file=sys.stderr)
        sys.stderr.flush()
        # A thread a half-built run started (a log's writer) must not hold the exit.
        os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
