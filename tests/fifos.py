"""Named pipes in tests: work that must never wait on one."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def within(seconds: float, fifo: Path, work: Callable[[], T]) -> T:
    """``work()``, which must not wait on ``fifo``: if it does, a writer lets it go and the
    test fails (instead of hanging the suite)."""
    done: list[T] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # its reader is there: it opens
        thread.join(seconds)
        pytest.fail(f"waited on the named pipe {fifo}")
    return done[0]


__all__ = ["within"]
