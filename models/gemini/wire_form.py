"""Function responses in the form a model family takes (``models/gemini/families.py``).

The session renders answers and emissions once, in the richest form (an id, ``will_continue``,
``scheduling``); this strips what the family or its backend would refuse. The SDK does not do
it: ``send_tool_response`` serialises fields as given and skips its Vertex converters, so a
``scheduling`` sent to Vertex closes the session with 1007.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from google.genai import types

from live import wire
from models.gemini import sdk_form
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


def response_text(response: types.FunctionResponse) -> str:
    """A function response as the text a model with one answer per call is told instead
    (the same words as the session's text emissions, ``live/link/outbox.py``)."""
    payload = json.dumps(response.response or {}, default=str)
    return f"Function {response.name} returned: {payload}"


class AnsweredCalls:
    """The calls a connection has answered, for a family that takes one answer per call.

    The session sends a stream's emissions as text for such a family (its emission mode is
    chosen from the same table); this keeps a session configured otherwise from sending a
    second answer for a call id all the same.
    """

    def __init__(self, family: Capabilities) -> None:
        self._once = not family.will_continue
        self._ids: set[str] = set()

    def split(
        self, responses: Sequence[wire.FunctionResponse | types.FunctionResponse]
    ) -> tuple[list[types.FunctionResponse], list[types.FunctionResponse]]:
        """``responses`` in the SDK's form, as (first answers to send, later ones to say as
        text)."""
        answers = [sdk_form.function_response(r) for r in responses]
        if not self._once:
            return answers, []
        first: list[types.FunctionResponse] = []
        later: list[types.FunctionResponse] = []
        for response in answers:
            if response.id and response.id in self._ids:
                later.append(response)
            else:
                first.append(response)
                if response.id:
                    self._ids.add(response.id)
        return first, later


__all__ = ["KICK", "AnsweredCalls", "response_text", "tool_responses"]
