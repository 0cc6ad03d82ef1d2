"""Function responses in the form a model family takes (``models/gemini/families.py``).

The session renders answers and emissions once, in the richest form (an id, ``will_continue``,
``scheduling``); this strips what the family or its backend would refuse. The SDK does not do
it: ``send_tool_response`` serialises fields as given and skips its Vertex converters, so a
``scheduling`` sent to Vertex closes the session with 1007.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.genai import types

from models.gemini.families import Capabilities

# The realtime input that makes a 3.x model run after a tool response (it may otherwise stay
# silent until the next input): one space, which says nothing.
KICK = " "


def tool_responses(
    responses: Iterable[types.FunctionResponse], family: Capabilities
) -> list[types.FunctionResponse]:
    """``responses`` without the fields ``family`` does not take."""
    unset: dict[str, Any] = {}
    if not family.scheduling:
        unset["scheduling"] = None
    if not family.will_continue:
        unset["will_continue"] = None
    if not family.response_ids:
        unset["id"] = None
    if not unset:
        return list(responses)
    return [r.model_copy(update=unset) for r in responses]


__all__ = ["KICK", "tool_responses"]
