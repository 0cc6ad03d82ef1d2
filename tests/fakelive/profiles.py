"""How each Live model family and backend treats a client, for the fake to reproduce.

A :class:`Profile` is what the fake does beyond the plain protocol, each rule a behaviour
integrators reported (issue 26; ``models/gemini/families.py`` is Lookout's side of it):

* ``client_content_closes``: client content after the setup closes the session with 1007
  (3.1; an initial history seed would be allowed there, and Lookout sends none, so the fake
  refuses every one).
* ``setup_hangs_on``: setup fields that leave ``setupComplete`` unsent for ever (3.1:
  affective dialog, proactivity); the SDK itself waits without a time-out.
* ``needs_kick``: after a tool response the model does not run until a realtime input
  follows (3.x); the fake records each time the model runs (``LiveConnection.runs``), so a
  test that waits for a run hangs exactly where a real session would stay silent.
* ``refused_response_fields``: function response fields that close the session with 1007
  (Vertex: ``scheduling``, "Unknown name").

The model "runs" (``runs`` gets the reason) after a tool response when no kick is needed,
and on the realtime input that follows one when it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .records import ClientMessage, LiveConnection
from .wire import get_field, snake_case

__all__ = ["PROFILES", "Profile", "Reaction", "react", "setup_hangs"]


@dataclass(frozen=True)
class Profile:
    name: str = "plain"
    client_content_closes: bool = False
    setup_hangs_on: frozenset[str] = frozenset()
    needs_kick: bool = False
    refused_response_fields: frozenset[str] = frozenset()


PROFILES: dict[str, Profile] = {
    "plain": Profile(),
    "3.8": Profile("3.8"),
    "3.1": Profile(
        "3.1",
        client_content_closes=True,
        setup_hangs_on=frozenset({"enable_affective_dialog", "proactivity"}),
        needs_kick=True,
    ),
    "2.5": Profile("2.5"),
    "2.5-vertex": Profile("2.5-vertex", refused_response_fields=frozenset({"scheduling"})),
    # 3.1 on Vertex AI: both sets of rules (not reported as such; the strictest case).
    "3.1-vertex": Profile(
        "3.1-vertex",
        client_content_closes=True,
        setup_hangs_on=frozenset({"enable_affective_dialog", "proactivity"}),
        needs_kick=True,
        refused_response_fields=frozenset({"scheduling"}),
    ),
}


@dataclass(frozen=True)
class Reaction:
    """What the fake does about one client message: close the session, or note a run."""

    close: tuple[int, str] | None = None
    run: str | None = None


def _keys(value: Any) -> set[str]:
    """Every key anywhere in ``value``, snake-cased (the SDK mixes spellings)."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            found.add(snake_case(str(key)))
            found |= _keys(item)
    elif isinstance(value, list):
        for item in value:
            found |= _keys(item)
    return found


def setup_hangs(profile: Profile, setup: Mapping[str, Any]) -> bool:
    """The setup carries a field this family never answers."""
    return bool(profile.setup_hangs_on & _keys(setup))


def react(profile: Profile, conn: LiveConnection, msg: ClientMessage) -> Reaction:
    """The family's answer to one message after the setup."""
    if msg.kind == "client_content" and profile.client_content_closes:
        return Reaction(close=(1007, f"fake live ({profile.name}): client content mid-session"))
    if msg.kind == "tool_response":
        responses = get_field(msg.body, "function_responses", []) or []
        for response in responses:
            refused = profile.refused_response_fields & _keys(response)
            if refused:
                name = sorted(refused)[0]
                return Reaction(
                    close=(1007, f'Invalid JSON payload received. Unknown name "{name}"')
                )
        conn.awaiting_kick = profile.needs_kick
        return Reaction(run=None if profile.needs_kick else "tool_response")
    if msg.kind == "realtime_input" and conn.awaiting_kick:
        conn.awaiting_kick = False
        return Reaction(run="kick")
    return Reaction()
