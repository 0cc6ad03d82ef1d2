"""A spending cap on the model's tokens: counted from its usage metadata, acted on in steps.

``TokenMeter`` counts: each turn's largest ``total_token_count`` (the model may report
a turn's usage more than once, each report the turn so far, so only what a report adds
to the turn's largest so far is new), in a rolling window (an hour) and for the session.
A turn ends at ``turnComplete`` or an interruption.

``SpendingCap`` acts on the limits (``live/config.py:BudgetLimits``):

- below ``saving_at`` (80 %) of both limits: ``normal``, nothing is held back;
- at 80 % of either: ``saving``: frames (``--send-frames``) and looks stop first, and
  the model is told once, in a short note through the outbox (the model adapter puts it
  in the form its family takes mid-session: realtime text where client content would
  close the session);
- at 100 % of either: ``capped``: emissions of streams reach the model at most once per
  ``capped_interval_s`` (a minute): what comes in between is merged by the tool's
  coalesce rule, the newest value winning (the device still counts and logs every one;
  only what reaches the model is thinned); a stream's final emission is never held.

Each change of state is one ``budget`` event (console, logs, the page, ``/metrics``).
When the rolling hour frees room the state goes back down, said once; the session's
limit never frees room.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from typing import Any

from live.config import BudgetLimits
from live.events import BudgetState, Event
from live.link.outbox import Coalesce, OutEmission
from live.util.clock import Clock
from live.util.signal import Wakeup


class BudgetLevel(enum.Enum):
    NORMAL = "normal"
    SAVING = "saving"
    CAPPED = "capped"


LEVELS = tuple(level.value for level in BudgetLevel)
# Reports within this many seconds share one entry of the window (kept at the later time,
# so an entry never leaves the window early).
_BUCKET_S = 1.0


class TokenMeter:
    """Tokens used: in a rolling window and for the session, each turn counted once."""

    def __init__(self, window_s: float = 3600.0) -> None:
        self.window_s = window_s
        self.session = 0
        self._entries: deque[list[float]] = deque()  # [when, tokens], oldest first
        self._in_window = 0
        self._turn_max = 0

    def count(self, total: int, now: float) -> int:
        """A usage report of the current turn (its ``total_token_count``); returns what it
        adds: the amount by which it exceeds the turn's largest report so far."""
        added = max(0, total - self._turn_max)
        self._turn_max = max(self._turn_max, total)
        if added:
            self.session += added
            self._in_window += added
            if self._entries and self._entries[-1][0] > now - _BUCKET_S:
                self._entries[-1][0] = now
                self._entries[-1][1] += added
            else:
                self._entries.append([now, added])
        return added

    def end_turn(self) -> None:
        """The turn is over: the next report starts a new one."""
        self._turn_max = 0

    def in_window(self, now: float) -> int:
        """Tokens counted in the window ending ``now``."""
        while self._entries and self._entries[0][0] <= now - self.window_s:
            self._in_window -= int(self._entries.popleft()[1])
        return self._in_window

    def next_expiry(self) -> float | None:
        """When the oldest tokens in the window leave it (None: the window is empty)."""
        return self._entries[0][0] + self.window_s if self._entries else None


def _tokens(n: int) -> str:
    return f"{n:,} tokens".replace(",", " ")


class SpendingCap:
    """The cap's state and what it holds back (see the module's docstring).

    ``note(text)`` tells the model something; ``release(emission)`` hands an emission
    on to the outbox; ``coalesce`` merges two emissions of a tool (newest wins).
    """

    def __init__(
        self,
        limits: BudgetLimits,
        clock: Clock,
        *,
        emit: Callable[[Event], None],
        note: Callable[[str], None],
        release: Callable[[OutEmission], None],
        coalesce: Coalesce,
    ) -> None:
        self.limits = limits
        self.clock = clock
        self.meter = TokenMeter(limits.window_s)
        self.level = BudgetLevel.NORMAL
        self.limit = ""  # which limit the level is for: "hour" or "session"
        self.thinned = 0  # emissions merged into a later one while capped
        self.notes = 0  # notes told to the model
        self._emit = emit
        self._note = note
        self._release = release
        self._coalesce = coalesce
        self._held: dict[str, OutEmission] = {}
        self._next_release: float | None = None
        self._wakeup = Wakeup()

    @property
    def enabled(self) -> bool:
        return self.limits.enabled

    # ------------------------------------------------------------- counting

    def on_usage(self, total_tokens: int) -> None:
        if self.meter.count(total_tokens, self.clock.now()):
            self._update()

    def end_turn(self) -> None:
        self.meter.end_turn()

    def hour_used(self) -> int:
        return self.meter.in_window(self.clock.now())

    def _fraction(self) -> tuple[float, str]:
        """The larger share of a limit used, and which limit it is."""
        shares: list[tuple[float, str]] = [(0.0, "")]
        if self.limits.per_hour is not None:
            shares.append((self.hour_used() / self.limits.per_hour, "hour"))
        if self.limits.per_session is not None:
            shares.append((self.meter.session / self.limits.per_session, "session"))
        return max(shares)

    def _update(self) -> None:
        share, limit = self._fraction()
        if share >= 1.0:
            level = BudgetLevel.CAPPED
        elif share >= self.limits.saving_at:
            level = BudgetLevel.SAVING
        else:
            level, limit = BudgetLevel.NORMAL, ""
        if level is self.level:
            return
        before, self.level, self.limit = self.level, level, limit
        if before is BudgetLevel.CAPPED:
            self._flush()  # what was held goes now: the model may take emissions again
        if level is BudgetLevel.CAPPED:
            self._next_release = None  # the first emission goes at once, then one a minute
        self._said(before)
        self._wakeup.set()

    # --------------------------------------------------------------- acting

    def frames_allowed(self) -> bool:
        """Whether frames may go to the model (not past ``saving_at`` of a limit)."""
        return self.level is BudgetLevel.NORMAL

    def look_refusal(self) -> str | None:
        """Why the model may not look now (None: it may)."""
        if self.level is BudgetLevel.NORMAL:
            return None
        return f"the token budget is at {self._percent()} % of its {self.limit} limit: no looks"

    def hold(self, emission: OutEmission) -> bool:
        """Whether the cap takes this emission (to release it later or at once itself)."""
        if self.level is not BudgetLevel.CAPPED:
            return False
        if emission.final:
            # A stream's end is never held; what waited for it goes first.
            waiting = self._held.pop(emission.call_id, None)
            if waiting is not None:
                self._release(waiting)
            return False
        waiting = self._held.pop(emission.call_id, None)
        if waiting is not None:
            payload = self._coalesce(emission.name, waiting.payload, emission.payload)
            emission = OutEmission(
                emission.call_id, emission.name, payload, False, emission.scheduling
            )
            self.thinned += 1
        now = self.clock.now()
        if self._next_release is None or now >= self._next_release:
            self._release(emission)
            self._next_release = now + self.limits.capped_interval_s
        else:
            self._held[emission.call_id] = emission
            self._wakeup.set()
        return True

    def forget(self) -> None:
        """Drop what is held: it answers calls of a model session that is gone."""
        self._held.clear()

    def _flush(self) -> None:
        held, self._held = self._held, {}
        for emission in held.values():
            self._release(emission)
        if held:
            self._next_release = self.clock.now() + self.limits.capped_interval_s

    async def run(self) -> None:
        """Release held emissions on time, and see the rolling hour free room."""
        while True:
            deadline = self._next_wake()
            if deadline is None:
                await self._wakeup.wait()
            else:
                with self.clock.move_on_after(deadline - self.clock.now()):
                    await self._wakeup.wait()
            self._update()
            due = self._next_release
            if self._held and due is not None and self.clock.now() >= due:
                self._flush()

    def _next_wake(self) -> float | None:
        times: list[float] = []
        if self._held and self._next_release is not None:
            times.append(self._next_release)
        if self.level is not BudgetLevel.NORMAL and self.limits.per_hour is not None:
            expiry = self.meter.next_expiry()
            if expiry is not None:
                times.append(expiry)
        return min(times) if times else None

    # --------------------------------------------------------------- saying

    def _percent(self) -> int:
        return int(self._fraction()[0] * 100)

    def _said(self, before: BudgetLevel) -> None:
        limit_value = self.limits.per_hour if self.limit == "hour" else self.limits.per_session
        of = f"{_tokens(limit_value or 0)} {'an hour' if self.limit == 'hour' else 'this session'}"
        interval = f"{self.limits.capped_interval_s:g} s"
        if self.level is BudgetLevel.CAPPED:
            message = f"token budget spent ({of}): updates to the model at most one per {interval}"
        elif self.level is BudgetLevel.SAVING and before is BudgetLevel.NORMAL:
            message = f"{self._percent()} % of the token budget ({of}): frames and looks stop"
        elif self.level is BudgetLevel.SAVING:
            message = (
                f"below the token budget again ({self._percent()} % of {of}): updates as they "
                "come; frames and looks still stopped"
            )
        else:
            message = "token budget back to normal: frames, looks and updates as configured"
        # The model is told once when saving starts, and once when it ends: each note is
        # input it pays for, and the steps between change only how often updates come.
        if before is BudgetLevel.NORMAL:
            self.notes += 1
            self._note(
                "Device note: the token budget is nearly spent, so camera frames and look "
                f"are paused; count updates still come (at most one per {interval} if it "
                "runs out)."
            )
        elif self.level is BudgetLevel.NORMAL:
            self.notes += 1
            self._note("Device note: the token budget has room again; look is available.")
        self._emit(
            BudgetState(
                state=self.level.value,
                limit=self.limit,
                hour_used=self.hour_used(),
                hour_limit=self.limits.per_hour,
                session_used=self.meter.session,
                session_limit=self.limits.per_session,
                message=message,
            )
        )

    def snapshot(self) -> dict[str, Any]:
        """The cap as the page shows it."""
        return {
            "state": self.level.value,
            "limit": self.limit or None,
            "hour": {"used": self.hour_used(), "limit": self.limits.per_hour},
            "session": {"used": self.meter.session, "limit": self.limits.per_session},
            "frames": self.frames_allowed(),
            "looks": self.look_refusal() is None,
            "thinned": self.thinned,
        }


__all__ = ["LEVELS", "BudgetLevel", "SpendingCap", "TokenMeter"]
