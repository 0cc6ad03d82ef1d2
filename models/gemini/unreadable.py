"""What to make of a Live server message the SDK could not read.

The SDK raises whatever its parsing happens to raise on a bad frame: ``AttributeError``
for JSON that is not an object, ``RecursionError`` for deep nesting, ``ValueError`` for
text that is not JSON, pydantic's ``ValidationError`` for the wrong shape, ``TypeError``
for an object of keys it does not know. ``models/gemini/model.py`` catches them all; this module
says which of two things happened, from the frame itself:

* a well-formed message of a kind this SDK does not know (a newer protocol): skipped, the
  connection stays;
* anything else: the server broke the protocol, and the connection is dropped (the session
  reconnects with back-off).

The frame is kept by :class:`FrameTap`, which sits on the SDK session's websocket and
remembers the last frame read; it is only parsed (again) when the SDK failed on it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.genai import types

# Keys of a LiveServerMessage as they may arrive (protobuf JSON accepts both spellings).
_FIELDS = frozenset(types.LiveServerMessage.model_fields)
KNOWN_KEYS = _FIELDS | {re.sub(r"_(\w)", lambda m: m[1].upper(), name) for name in _FIELDS}


class FrameTap:
    """The SDK session's websocket, remembering the last frame the SDK read from it."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self.last: str | bytes | None = None

    async def recv(self, *args: Any, **kwargs: Any) -> Any:
        self.last = None  # a failed read must not leave the frame before it as "the last"
        self.last = await self._ws.recv(*args, **kwargs)
        return self.last

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)


def tap(session: Any) -> FrameTap | None:
    """Put a :class:`FrameTap` on an SDK ``AsyncSession`` (None where its websocket moved)."""
    ws = getattr(session, "_ws", None)
    if ws is None or not callable(getattr(ws, "recv", None)):
        return None
    frame_tap = FrameTap(ws)
    session._ws = frame_tap
    return frame_tap


def frame_problem(frame: str | bytes) -> str | None:
    """What is wrong with ``frame`` as a Live message; None for a message of a newer protocol.

    Called only after the SDK failed on the frame, so "nothing wrong that we can see"
    still means unreadable, unless the frame is an object with no key this SDK knows.
    """
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError:
            return "not UTF-8 text"
    try:
        data = json.loads(frame)
    except RecursionError:
        return "JSON nested too deep"
    except ValueError:
        return "not JSON"
    if not isinstance(data, dict):
        return f"JSON {_json_kind(data)}, not an object"
    if data and not (data.keys() & KNOWN_KEYS):
        return None
    return "a message of the wrong shape"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    return "number"


def reached_server(exc: BaseException) -> bool:
    """Whether ``exc``, raised by the SDK's ``connect``, came after its websocket opened.

    Then it failed on the server's answer to the setup, not on building ours. Told by the
    SDK's ``AsyncLive.connect`` frame in the traceback, with its ``ws`` bound; where that
    frame is not found (another SDK version) the answer is taken to be the server's, so a
    doubt is retried rather than refused.
    """
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "connect" and frame.f_globals.get("__name__") == (
            "google.genai.live"
        ):
            return "ws" in frame.f_locals
        tb = tb.tb_next
    return True


__all__ = [
    "KNOWN_KEYS",
    "FrameTap",
    "frame_problem",
    "reached_server",
    "tap",
]
