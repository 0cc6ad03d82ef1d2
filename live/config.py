"""Session configuration: emission mode, bounds, fan-out and reconnect policy."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from live.util.backoff import Backoff
from live.wire import Scheduling


class EmitMode(enum.Enum):
    """How a streaming tool's emissions reach the model.

    FUNCTION_RESPONSE: a FunctionResponse per emission for the call id with
    ``will_continue=True`` (needs a model with NON_BLOCKING calls).
    TEXT: user content "Function <name> returned: <dict>" with
    ``turn_complete=False``, for models with synchronous calls only.
    """

    FUNCTION_RESPONSE = "function_response"
    TEXT = "text"


PENDING_STATUS = "The function is running asynchronously and the results are pending."


@dataclass(frozen=True)
class StreamBounds:
    """Limits on one stream; reaching one ends it with a final emission saying which.

    ``None`` means unlimited. ``min_interval_s`` throttles emissions but the
    latest value is always delivered (trailing edge kept).
    """

    max_lifetime_s: float | None = None
    max_emissions: int | None = None
    min_interval_s: float = 0.0


@dataclass(frozen=True)
class ReconnectPolicy:
    """How the session (re)connects to its model, which may be away at any moment.

    ``max_attempts=None`` (the default) keeps trying for as long as the session
    runs: the device works without a model and picks it up when it comes. A
    number makes the session give up (and end) after that many attempts in a
    row (connections that did not last ``stable_after_s`` among them), for those
    who want a missing model to be fatal.
    """

    max_attempts: int | None = None
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    connect_timeout_s: float = 15.0
    # A setup the model refused (bad key, unknown model) is refused again at once:
    # such retries wait this long, in case the key or the quota is fixed meanwhile.
    refused_backoff_s: float = 300.0
    # A connection that ends sooner than this after setup did not last: it counts as a
    # failed attempt, so a server that says GoAway (or drops us, or sends garbage) right
    # after every setup is retried with back-off, not in a loop. One that lasted is
    # reconnected at once, as a GoAway asks. A minute: Live sessions last minutes, and
    # one that cannot outlive a missed keepalive (about 40 s) is not working either.
    stable_after_s: float = 60.0
    # A session resumption handle is valid for two hours after the server gave it (Live
    # API docs): an older one starts a fresh session at once rather than ask the service
    # to refuse it (a lost round trip, and a refusal whose form is not documented).
    handle_valid_s: float = 7200.0

    def backoff(self, attempt: int) -> float:
        """Delay before connection attempt ``attempt`` (1-based); the first is immediate."""
        return Backoff(self.initial_backoff_s, self.max_backoff_s).delay(attempt - 1)

    def gives_up_after(self, attempt: int) -> bool:
        return self.max_attempts is not None and attempt >= self.max_attempts


@dataclass(frozen=True)
class BudgetLimits:
    """A spending cap on the model's tokens (``live/link/budget.py``); ``None``: no cap.

    ``per_hour`` counts a rolling hour (``window_s``), ``per_session`` the whole session.
    At ``saving_at`` of either, frames and looks stop and the model is told; at the limit,
    emissions reach the model at most once per ``capped_interval_s`` (the newest wins).
    """

    per_hour: int | None = None
    per_session: int | None = None
    saving_at: float = 0.8
    window_s: float = 3600.0
    capped_interval_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("per_hour", "per_session"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 token")
        if not 0 < self.saving_at <= 1:
            raise ValueError("saving_at must be in (0, 1]")

    @property
    def enabled(self) -> bool:
        return self.per_hour is not None or self.per_session is not None


@dataclass(frozen=True)
class SessionConfig:
    emit_mode: EmitMode = EmitMode.FUNCTION_RESPONSE
    scheduling: Scheduling = Scheduling.WHEN_IDLE
    system_instruction: str | None = None
    # Input fan-out: which realtime input tools receive and how much each may queue.
    tool_input_accept: tuple[str, ...] = ("image/*",)
    tool_input_maxsize: int = 1
    # Model lane: frames reach the model only when asked, rate-limited, never in privacy mode.
    send_frames: bool = False  # the setting send_frames (--send-frames)
    # Which realtime requests the model lane takes (a ``LiveRequest``; None: every frame):
    # of several cameras, the one whose frames the model is sent.
    model_input: Callable[[Any], bool] | None = None
    privacy: bool = False
    model_frame_interval_s: float = 1.0
    # Bounds.
    stream_bounds: StreamBounds = field(default_factory=StreamBounds)
    session_emission_budget: int | None = None
    # A second call of a running streaming tool: run both (True) or refuse it explicitly.
    allow_concurrent_calls: bool = True
    # Streams running at once, all tools together (None: no bound). Each one consumes
    # every percept: a model that calls count_people 5,000 times in one message would
    # otherwise slow the device's own count and fill the event log.
    max_streams: int | None = None
    # How long a stop waits for a tool's cleanup before reporting it as stuck.
    stop_timeout_s: float = 5.0
    # Messages the device posts on its own (text, activity, frames) kept for the model
    # while it cannot take them; past this the oldest are dropped, counted and said.
    # Answers and emissions are one per call (merged while it is away): never dropped.
    outbox_max: int = 256
    # At teardown, how long queued answers may take to reach a live connection.
    flush_timeout_s: float = 1.0
    reconnect: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    # A spending cap on the model's tokens (none by default).
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    # Values never to appear in errors, logs or events (API keys).
    secrets: tuple[str, ...] = ()

    @property
    def sends_frames(self) -> bool:
        """Frames go to the model: asked for (send_frames), and not in privacy mode."""
        return self.send_frames and not self.privacy
