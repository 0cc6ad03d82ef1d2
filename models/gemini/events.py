"""Gemini Live server messages (``types.LiveServerMessage``) as ``live.model`` model events.

Wire facts this relies on are in ``docs/gemini-live-wire.md``.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import uuid
from collections.abc import Mapping
from typing import Any

from google.genai import types

from live.model import (
    FunctionCallRequest,
    ModelAudioOut,
    ModelEvent,
    ModelGoAway,
    ModelInterrupted,
    ModelResumptionUpdate,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTranscriptOut,
    ModelTurnComplete,
    ModelUsage,
)

# The Live model's logger: what goes wrong reading a message is a Live connection's story.
log = logging.getLogger("lookout.gemini")


def parse_duration(value: object) -> float | None:
    """Seconds from a protobuf Duration as the SDK leaves it ("10s", "0.5s") or a number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        try:
            return float(value.get("seconds", 0)) + float(value.get("nanos", 0)) / 1e9
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip().removesuffix("s")
        try:
            return float(text)
        except ValueError:
            return None
    return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: JSON may escape a lone surrogate (``"\\ud800"``), which
    no UTF-8 console, file or socket can write; it becomes U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def valid_value(value: Any) -> Any:
    """``value`` (function call arguments) with every string in it made valid Unicode."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(str(k)): valid_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [valid_value(v) for v in value]
    return value


def by_modality(details: list[types.ModalityTokenCount] | None) -> tuple[tuple[str, int], ...]:
    """``promptTokensDetails`` as (modality, tokens) pairs; a modality the SDK does not
    name is kept by the name it came with, one given twice is added up."""
    totals: dict[str, int] = {}
    for item in details or ():
        if item is None or not item.token_count:
            continue
        modality = item.modality
        name = str(getattr(modality, "value", modality) or "MODALITY_UNSPECIFIED")
        totals[name] = totals.get(name, 0) + int(item.token_count)
    return tuple(totals.items())


def response_tokens(usage: types.UsageMetadata) -> int:
    """The response's tokens, whichever spelling the server used.

    The SDK keeps ``responseTokenCount`` on the Gemini API and drops ``candidatesTokenCount``;
    on Vertex AI it reads ``candidatesTokenCount`` (into ``response_token_count``) and drops
    ``responseTokenCount``. When the spelling sent was dropped, the total says it: the total
    is the prompt, the response, the tool-use prompt and the thoughts (a total alone, without
    the prompt's count, says nothing about the response: 0).
    """
    if usage.response_token_count is not None:
        return usage.response_token_count
    candidates = getattr(usage, "candidates_token_count", None)  # a later SDK's field
    if isinstance(candidates, int):
        return candidates
    if not usage.total_token_count or usage.prompt_token_count is None:
        return 0  # no breakdown to take the response's share from
    rest = (
        usage.prompt_token_count
        + (usage.tool_use_prompt_token_count or 0)
        + (usage.thoughts_token_count or 0)
    )
    return max(0, usage.total_token_count - rest)


def model_events(message: types.LiveServerMessage) -> list[ModelEvent]:
    """Every model event in one server message, GoAway last.

    The session stops reading at a GoAway, so anything after it in the same message
    (a final resumption handle in particular) would be lost if it came first.
    """
    events: list[ModelEvent] = []
    content = message.server_content
    if content is not None:
        if content.input_transcription is not None and content.input_transcription.text:
            events.append(ModelTranscriptOut(valid_text(content.input_transcription.text), "input"))
        turn = content.model_turn
        for part in (turn.parts or []) if turn is not None else []:
            if part.thought:
                continue  # the model's reasoning is not something it said
            if part.text:
                events.append(ModelTextOut(valid_text(part.text)))
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                events.append(ModelAudioOut(blob.data, blob.mime_type or "audio/pcm"))
        if content.output_transcription is not None and content.output_transcription.text:
            events.append(
                ModelTranscriptOut(valid_text(content.output_transcription.text), "output")
            )
        if content.interrupted:
            events.append(ModelInterrupted())
        if content.turn_complete:
            events.append(ModelTurnComplete())
    if message.tool_call is not None and message.tool_call.function_calls:
        calls = []
        for call in message.tool_call.function_calls:
            call_id = valid_text(call.id or "")
            name = valid_text(call.name or "")
            if not call_id:
                # The Gemini API always sends ids; without one no answer could be matched.
                call_id = f"missing-id-{uuid.uuid4().hex[:12]}"
                log.warning("function call %s without an id; answering as %s", name, call_id)
            calls.append(FunctionCallRequest(call_id, name, valid_value(dict(call.args or {}))))
        events.append(ModelToolCall(tuple(calls)))
    cancellation = message.tool_call_cancellation
    if cancellation is not None and cancellation.ids:
        events.append(ModelToolCancellation(tuple(valid_text(i) for i in cancellation.ids)))
    update = message.session_resumption_update
    if update is not None:
        handle = valid_text(update.new_handle) if update.new_handle is not None else None
        events.append(ModelResumptionUpdate(handle, bool(update.resumable)))
    usage = message.usage_metadata
    if usage is not None:
        events.append(
            ModelUsage(
                prompt_tokens=usage.prompt_token_count or 0,
                response_tokens=response_tokens(usage),
                total_tokens=usage.total_token_count or 0,
                prompt_by_modality=by_modality(usage.prompt_tokens_details),
            )
        )
    if message.go_away is not None:
        events.append(ModelGoAway(parse_duration(message.go_away.time_left)))
    return events


__all__ = [
    "by_modality",
    "model_events",
    "parse_duration",
    "response_tokens",
    "valid_text",
    "valid_value",
]
