"""How the model link's failures are counted and said, and when it gives up.

``ModelLink`` (``live/link/connection.py``) connects and serves; every failed attempt and
every lost connection comes here, which says it (a ``ConnectionState`` event, a log line)
and answers how long to wait before the next attempt, or that the link gives up.

A connection that ends before ``stable_after_s`` counts as a failed attempt, so a model
that drops us (or says GoAway) right after every setup is retried with back-off. A run of
failures in a row is said once, then again at the 10th, 100th, 1000th... with the count,
and its end once (``connected``, after how many): a flapping model costs a few lines a
day, not one per attempt. Only a ``ReconnectPolicy`` with ``max_attempts`` gives up, and
then ``failure`` says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from live.config import ReconnectPolicy
from live.events import ErrorEvent, Event
from live.model import ConnectionLost
from live.util.backoff import FailureRun, milestone, span
from live.util.redact import redact

log = logging.getLogger("lookout.connection")


@dataclass(frozen=True)
class Failed:
    """A connection attempt that failed, and why."""

    reason: str
    refused: bool = False  # the model said no; asking again at once would get the same answer


class SetState(Protocol):
    """``ModelLink._set_state``: the link's state; ``say`` False keeps it off the event log."""

    def __call__(
        self,
        state: str,
        *,
        attempt: int = 0,
        reason: str = "",
        code: int | None = None,
        retry_in_s: float | None = None,
        say: bool = True,
    ) -> None: ...


class LinkFailures:
    """The link's run of failures in a row (failed attempts, connections that did not
    last), what each one says, and the reason it gave up (``failure``)."""

    def __init__(
        self,
        policy: ReconnectPolicy,
        now: Callable[[], float],
        *,
        set_state: SetState,
        emit: Callable[[Event], None],
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.policy = policy
        self._set_state = set_state
        self._emit = emit
        self._secrets = secrets
        self._run = FailureRun(now)
        # A connection in this run ended too soon: the next is said only once it lasts.
        self.flapping = False
        self.failure: str | None = None

    @property
    def count(self) -> int:
        """Failures in a row so far (0: the last connection lasted, or none failed yet)."""
        return self._run.failures

    def summary(self) -> str:
        """What a connection that ends the run says of it (``after 12 failed attempts...``)."""
        return self._run.summary()

    def lasted(self) -> None:
        """A connection lasted ``stable_after_s``: the run of failures is over."""
        self._run.reset()
        self.flapping = False

    def at_close(self) -> str:
        """What closing says of a run still going: its count (it was said only at its 1st,
        10th, 100th...)."""
        return self._run.counted("while failing") if self._run.failures > 1 else ""

    def attempt_failed(self, outcome: Failed, attempt: int) -> float | None:
        """Say a failed connection attempt; the wait before the next one (None: given up)."""
        failures = self._run.fail()
        # The log follows the events: a run of failures once, then at its 10th...
        log.log(
            logging.WARNING if milestone(failures) else logging.DEBUG,
            "model connection attempt %d failed: %s",
            attempt,
            outcome.reason,
        )
        if self.policy.gives_up_after(failures) or (
            outcome.refused and self.policy.max_attempts is not None
        ):
            self.give_up(outcome, failures)
            return None
        delay = (
            self.policy.refused_backoff_s if outcome.refused else self.policy.backoff(failures + 1)
        )
        state = "refused" if outcome.refused else "unreachable"
        self.say(state, outcome.reason, attempt=attempt, retry_in_s=delay)
        return delay

    def after_loss(
        self, lost: ConnectionLost, lasted_s: float, attempt: int, *, stable: bool, announced: bool
    ) -> float | None:
        """Say how a connection ended; the wait before the next attempt (None: given up).

        ``stable``: it lasted ``stable_after_s``; ``announced``: it was said to be connected
        (then its end is said too)."""
        reason = redact(lost.reason, self._secrets)
        if not stable:
            # It did not last: one more failure in the run, and no more "connected" lines
            # for this run until a connection proves it lasts.
            self._run.fail()
            self.flapping = True
            reason = f"{reason}; it lasted {span(lasted_s)}"
        if not lost.retryable:
            # The model said no in the middle of a session (a revoked key): asking
            # again at once would get the same answer.
            refusal = Failed(f"model connection lost: {reason}", True)
            if stable:
                self._run.fail()
            self._set_state("disconnected", code=lost.code, reason=reason, say=announced)
            if self.policy.max_attempts is not None:
                self.give_up(refusal, self._run.failures)
                return None
            delay = self.policy.refused_backoff_s
            self.say("refused", refusal.reason, retry_in_s=delay)
            return delay
        if stable:
            self._set_state("disconnected", code=lost.code, reason=reason)
            return 0.0
        failures = self._run.failures
        if self.policy.gives_up_after(failures):
            self._set_state("disconnected", code=lost.code, reason=reason, say=announced)
            self.give_up(
                Failed(
                    f"the model keeps dropping the connection within "
                    f"{span(self.policy.stable_after_s)} of setup ({failures} times in a "
                    f"row): {reason}"
                ),
                failures,
            )
            return None
        delay = self.policy.backoff(failures + 1)
        self.say(
            "disconnected",
            reason,
            attempt=attempt,
            code=lost.code,
            retry_in_s=delay,
            force=announced,
        )
        return delay

    def say(
        self,
        state: str,
        reason: str,
        *,
        attempt: int = 0,
        code: int | None = None,
        retry_in_s: float | None = None,
        force: bool = False,
    ) -> None:
        """A failure in a run: said the first time (and the first of each kind: a lost
        connection, then a model unreachable), then at the 10th, 100th... with the count."""
        say = self._run.say(state, force=force)
        if say:
            reason = self._run.counted(reason)
        self._set_state(
            state, attempt=attempt, reason=reason, code=code, retry_in_s=retry_in_s, say=say
        )

    def give_up(self, outcome: Failed, attempts: int) -> None:
        if outcome.refused or "keeps dropping" in outcome.reason:
            reason = outcome.reason
        else:
            reason = f"could not connect to the model after {attempts} attempts: {outcome.reason}"
        self.failure = reason
        self._set_state("failed", attempt=attempts, reason=reason)
        self._emit(ErrorEvent(message=reason, where="model"))
        log.error("%s", reason)


__all__ = ["Failed", "LinkFailures", "SetState"]
