"""What a session counts: frames, audio, emissions, calls, and the model's tokens.

The model reports a turn's usage as the turn so far, and may report it more than once
(``live/link/budget.py`` counts it the same way for the spending cap): each field of a report
adds only what it exceeds the turn's largest report so far, so ``/metrics`` and the
end-of-run line count every turn once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from live.model import ModelUsage


@dataclass
class SessionStats:
    frames_in: int = 0
    frames_to_model: int = 0
    frames_model_lane_dropped: int = 0
    frames_budget_held: int = 0  # frames the spending cap kept from the model (past 80 %)
    audio_in: int = 0  # microphone chunks into the session
    audio_to_model: int = 0
    audio_lost: int = 0  # chunks no model could take (away, or privacy mode)
    emissions: int = 0
    emissions_coalesced: int = 0
    outbox_dropped: int = 0  # messages for the model dropped past ``outbox_max``
    tool_calls: int = 0
    reconnects: int = 0
    events_dropped: int = 0
    usage_prompt_tokens: int = 0
    usage_response_tokens: int = 0
    usage_total_tokens: int = 0
    usage_prompt_by_modality: dict[str, int] = dataclasses.field(default_factory=dict)
    # The current turn's largest report so far, per field (not a count: never shown).
    _turn: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)

    def add_usage(self, usage: ModelUsage) -> None:
        """One usage report of the current turn: adds what is new in it."""
        self.usage_prompt_tokens += self._new("prompt", usage.prompt_tokens)
        self.usage_response_tokens += self._new("response", usage.response_tokens)
        self.usage_total_tokens += self._new("total", usage.total_tokens)
        for modality, tokens in usage.prompt_by_modality:
            by = self.usage_prompt_by_modality
            by[modality] = by.get(modality, 0) + self._new(f"modality:{modality}", tokens)

    def end_turn(self) -> None:
        """The turn is over (complete, interrupted, or its connection gone)."""
        self._turn.clear()

    def _new(self, field: str, reported: int) -> int:
        before = self._turn.get(field, 0)
        self._turn[field] = max(before, reported)
        return max(0, reported - before)
