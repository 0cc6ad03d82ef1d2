"""How request-response turns are run (``TurnConfig``) and how one ended (``TurnOutcome``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from live.events import Event


@dataclass(frozen=True)
class TurnConfig:
    system_instruction: str | None = None
    max_steps: int = 8  # model calls in one turn, so a model looping on tools is cut off
    tool_timeout_s: float = 60.0  # plain tools; jobs run until done or cancelled
    progress_interval_s: float = 0.5  # at most one progress event per job per interval
    delivery_attempts: int = 3  # model calls tried for a job's result before waiting
    retry_backoff_s: float = 1.0
    close_timeout_s: float = 2.0  # jobs get this long to wind down when the runner closes
    secrets: tuple[str, ...] = ()


class TurnOutcome(enum.Enum):
    ANSWERED = "answered"
    MODEL_FAILED = "model_failed"  # may succeed if tried again
    MODEL_REFUSED = "model_refused"  # will not succeed as it is
    TOO_MANY_STEPS = "too_many_steps"


@dataclass
class TurnResult:
    text: str
    outcome: TurnOutcome
    events: list[Event] = field(default_factory=list)


__all__ = ["TurnConfig", "TurnOutcome", "TurnResult"]
