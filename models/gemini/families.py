"""What each Gemini Live model family can take on the wire, by model name and backend.

Live models differ in how they take function calls, and integrators meet the differences as
closed sessions and silent models (issue 26 has the sources). One table says, per family,
what Lookout may send; ``capabilities(model, backend)`` picks the row by name, and the
configuration's ``family`` setting overrides the name (a model whose name misleads, a new
one that behaves like an old one). The wire forms that follow from a row are chosen in
``models/gemini/wire_form.py`` and ``device/app/parts.py`` (the session's emission mode).

Families:

* ``3.8`` (``gemini-3.8-live``, the default model): asynchronous (NON_BLOCKING) calls,
  several responses per call id (``will_continue``), ``scheduling`` honoured.
* ``3.1`` (``gemini-3.1-flash-live-preview``): synchronous calls only; client content after
  the first turn closes the session with 1007, so text goes as realtime text; after a tool
  response the model may not run until a realtime input follows (the one-space "kick").
* ``2.5`` (``gemini-2.5-flash-native-audio-…``, ``gemini-live-2.5-flash-preview``):
  asynchronous calls with scheduling, on the Gemini API.
* ``safe``: any name the table does not know. The one form every family above takes: the
  first response answers a call (its id only), later emissions go as realtime text, and a
  kick follows each tool response. It costs a new model the asynchronous niceties, never
  its session.

On Vertex AI every family loses ``scheduling`` (closes the session with 1007, "Unknown name
scheduling"), ``will_continue`` (documented unsupported) and response ids (integrators drop
them), and the SDK's ``send_tool_response`` does not strip them for Vertex: the table does.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass


class Backend(enum.Enum):
    GEMINI_API = "gemini_api"
    VERTEX = "vertex"


@dataclass(frozen=True)
class Capabilities:
    """What one family takes on one backend; every field is read where a wire form is chosen."""

    family: str
    backend: Backend = Backend.GEMINI_API
    # NON_BLOCKING declarations: the model goes on talking while a call runs.
    async_calls: bool = True
    # Several function responses for one call id (a stream's emissions).
    will_continue: bool = True
    # ``scheduling`` (SILENT / WHEN_IDLE / INTERRUPT) in a function response.
    scheduling: bool = True
    # Function responses name the call they answer.
    response_ids: bool = True
    # Client content after the first turn closes the session: text goes as realtime text.
    realtime_text_only: bool = False
    # After a tool response the model does not run until a realtime input follows.
    needs_kick: bool = False

    @property
    def streams_as_responses(self) -> bool:
        """A stream's emissions can be function responses for its call id; otherwise they
        go as text (``Function <name> returned: …``) after one answer to the call."""
        return self.async_calls and self.will_continue


SAFE = Capabilities(
    family="safe",
    async_calls=False,
    will_continue=False,
    scheduling=False,
    realtime_text_only=True,
    needs_kick=True,
)

# Name patterns, first match wins; searched in the lower-cased model name, which may carry a
# prefix (``models/…``, ``projects/P/locations/L/publishers/google/models/…``).
_TABLE: tuple[tuple[re.Pattern[str], Capabilities], ...] = (
    (re.compile(r"gemini-3\.8\b"), Capabilities(family="3.8")),
    (
        re.compile(r"gemini-3\.1\b"),
        Capabilities(
            family="3.1",
            async_calls=False,
            will_continue=False,
            scheduling=False,
            realtime_text_only=True,
            needs_kick=True,
        ),
    ),
    (re.compile(r"gemini-(?:live-)?2\.5\b"), Capabilities(family="2.5")),
)

FAMILIES: tuple[str, ...] = (*(row.family for _, row in _TABLE), SAFE.family)


def _on_vertex(row: Capabilities) -> Capabilities:
    """The same family on Vertex AI: no scheduling, no will_continue, no response ids, so a
    stream's later emissions go as realtime text (client content is not risked either)."""
    return dataclasses.replace(
        row,
        backend=Backend.VERTEX,
        will_continue=False,
        scheduling=False,
        response_ids=False,
        realtime_text_only=True,
    )


def capabilities(
    model: str, backend: Backend = Backend.GEMINI_API, family: str | None = None
) -> Capabilities:
    """The row for ``model`` (or for the family named by ``family``) on ``backend``.

    ``family`` is one of ``FAMILIES``; anything else is a ``ValueError`` (the configuration
    checks it first, so a user never meets this one).
    """
    if family is not None:
        rows = {row.family: row for _, row in _TABLE} | {SAFE.family: SAFE}
        if family not in rows:
            raise ValueError(f"unknown model family {family!r} (one of {', '.join(FAMILIES)})")
        row = rows[family]
    else:
        name = model.lower()
        row = next((r for pattern, r in _TABLE if pattern.search(name)), SAFE)
    return _on_vertex(row) if backend is Backend.VERTEX else row


__all__ = ["FAMILIES", "SAFE", "Backend", "Capabilities", "capabilities"]
