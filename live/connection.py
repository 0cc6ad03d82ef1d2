"""The model connection of a session: connect, send, receive, reconnect — for as long as it runs.

The model may be absent, connecting, unreachable or connected at any moment,
and none of these stops the session: tools, device calls and the event log
work without it. ``ModelLink.run`` keeps (re)connecting with backoff and
resumes with the newest session handle; ``ModelLink.send_forever`` sends the
outbox to whatever connection is up. Only a ``ReconnectPolicy`` with
``max_attempts`` makes it give up, and then ``failure`` says why.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from live.clock import Clock
from live.config import SessionConfig
from live.events import ConnectionState, ErrorEvent, Event
from live.model import (
    ConnectionLost,
    LiveConnection,
    LiveModel,
    LiveSetup,
    ModelEvent,
    ModelGoAway,
    ModelResumptionUpdate,
    ModelSetupError,
)
from live.outbox import Outbox
from live.redact import redact, short_error
from live.signal import Wakeup

log = logging.getLogger("lookout.connection")


@dataclass(frozen=True)
class _Failed:
    reason: str
    refused: bool = False  # the model said no; asking again at once would get the same answer


class ModelLink:
    def __init__(
        self,
        model: LiveModel,
        config: SessionConfig,
        clock: Clock,
        outbox: Outbox,
        *,
        setup: Callable[[], LiveSetup],
        on_event: Callable[[ModelEvent], None],
        emit: Callable[[Event], None],
        on_fresh_session: Callable[[], None],
    ) -> None:
        self.model = model
        self.config = config
        self.policy = config.reconnect
        self.clock = clock
        self.outbox = outbox
        self._setup = setup
        self._on_event = on_event
        self._emit = emit
        self._on_fresh_session = on_fresh_session
        self.state = "connecting"
        self.since = clock.now()
        self.resumption_handle: str | None = None
        self.failure: str | None = None
        self.reconnects = 0
        self.closing = False
        self.conn: LiveConnection | None = None
        self._ready = Wakeup()
        self._recv_scope: anyio.CancelScope | None = None
        self._send_failure: ConnectionLost | None = None
        self._connected_before = False

    @property
    def connected(self) -> bool:
        return self.conn is not None

    def _redact(self, text: str) -> str:
        return redact(text, self.config.secrets)

    def _set_state(
        self,
        state: str,
        *,
        attempt: int = 0,
        reason: str = "",
        code: int | None = None,
        retry_in_s: float | None = None,
    ) -> None:
        if state != self.state:
            self.since = self.clock.now()
        self.state = state
        self.outbox.poke()
        self._emit(
            ConnectionState(
                state=state,
                model=self.model.name,
                attempt=attempt,
                reason=reason,
                code=code,
                retry_in_s=retry_in_s,
            )
        )

    # ----------------------------------------------------------- connecting

    async def run(self) -> None:
        """Connect and reconnect until closed, or until the policy gives up."""
        attempt = 1
        delay = 0.0
        after_loss = False
        while not self.closing:
            if delay > 0:
                await self.clock.sleep(delay)
            self._set_state("reconnecting" if after_loss else "connecting", attempt=attempt)
            outcome = await self._attempt()
            if isinstance(outcome, _Failed):
                log.warning("model connection attempt %d failed: %s", attempt, outcome.reason)
                if self.policy.gives_up_after(attempt) or (
                    outcome.refused and self.policy.max_attempts is not None
                ):
                    await self._give_up(outcome, attempt)
                    return
                delay = (
                    self.policy.refused_backoff_s
                    if outcome.refused
                    else self.policy.backoff(attempt + 1)
                )
                state = "refused" if outcome.refused else "unreachable"
                self._set_state(state, attempt=attempt, reason=outcome.reason, retry_in_s=delay)
                attempt += 1
                continue
            heard, lost = await self._serve(outcome, attempt)
            if self.closing:
                return
            after_loss = True
            if lost is not None and not lost.retryable:
                # The model said no in the middle of a session (a revoked key): asking
                # again at once would get the same answer.
                refusal = _Failed(f"model connection lost: {self._redact(lost.reason)}", True)
                if self.policy.max_attempts is not None:
                    await self._give_up(refusal, attempt)
                    return
                delay = self.policy.refused_backoff_s
                self._set_state("refused", reason=refusal.reason, retry_in_s=delay)
                attempt = 1
                continue
            # A server that accepts setup and drops us before saying anything must not
            # make us spin: such a connection carries its attempt count (and backoff) on.
            attempt = 1 if heard else attempt + 1
            delay = self.policy.backoff(attempt)
            if not heard and self.policy.gives_up_after(attempt - 1):
                await self._give_up(
                    _Failed(
                        f"the model keeps dropping the connection right after setup "
                        f"({attempt - 1} times in a row)"
                    ),
                    attempt - 1,
                )
                return

    async def _attempt(self) -> LiveConnection | _Failed:
        """One connection attempt (a refused resumption handle is retried fresh at once)."""
        for _ in range(2):
            resuming = self.resumption_handle is not None
            setup = self._setup()
            try:
                with self.clock.fail_after(self.policy.connect_timeout_s):
                    conn = await self.model.connect(setup)
            except TimeoutError:
                return _Failed(f"no answer to setup within {self.policy.connect_timeout_s:g} s")
            except ModelSetupError as exc:
                if resuming:
                    # An expired or foreign handle is refused like a bad setup; a fresh
                    # session may still work, and there is no reason to wait for it.
                    log.warning("%s; starting a fresh session", self._redact(f"resuming: {exc}"))
                    self.resumption_handle = None
                    continue
                return _Failed(self._redact(f"model refused the session: {exc}"), refused=True)
            except ConnectionLost as exc:
                return _Failed(self._redact(exc.reason), refused=not exc.retryable)
            except OSError as exc:
                return _Failed(short_error(exc, self.config.secrets))
            if not (resuming and self.resumption_handle is not None):
                # A new model session never issued our running call ids.
                self._on_fresh_session()
            if self._connected_before:
                self.reconnects += 1
            self._connected_before = True
            return conn
        return _Failed("model refused the session")

    async def _give_up(self, outcome: _Failed, attempts: int) -> None:
        if outcome.refused or "keeps dropping" in outcome.reason:
            reason = outcome.reason
        else:
            reason = f"could not connect to the model after {attempts} attempts: {outcome.reason}"
        self.failure = reason
        self._set_state("failed", attempt=attempts, reason=reason)
        self._emit(ErrorEvent(message=reason, where="model"))
        log.error("%s", reason)

    # ------------------------------------------------------------- serving

    async def _serve(
        self, conn: LiveConnection, attempt: int
    ) -> tuple[bool, ConnectionLost | None]:
        """Receive until the connection is lost: whether it said anything, and how it ended."""
        self._send_failure = None
        self._set_conn(conn)
        self._set_state("connected", attempt=attempt)
        heard = False
        lost: ConnectionLost | None = None
        with anyio.CancelScope() as scope:
            self._recv_scope = scope
            try:
                async with contextlib.aclosing(conn.receive()) as events:  # type: ignore[type-var]
                    async for event in events:
                        heard = True
                        if isinstance(event, ModelGoAway):
                            self._set_state("go_away", reason=f"time left {event.time_left_s}")
                            lost = ConnectionLost("server sent GoAway")
                            break
                        if isinstance(event, ModelResumptionUpdate):
                            if event.resumable and event.handle:
                                self.resumption_handle = event.handle
                            continue
                        self._on_event(event)
                    else:
                        lost = ConnectionLost("the model closed the connection")
            except ConnectionLost as exc:
                lost = exc
        if scope.cancelled_caught:
            lost = self._send_failure or ConnectionLost("send failed")
        self._recv_scope = None
        self._clear_conn()
        with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
            await conn.close()
        if self.closing:
            return heard, None
        assert lost is not None
        self._set_state("disconnected", code=lost.code, reason=self._redact(lost.reason))
        self.outbox.drop_frames()
        return heard, lost

    def _set_conn(self, conn: LiveConnection) -> None:
        self.conn = conn
        self._ready.set()

    def _clear_conn(self) -> None:
        self.conn = None

    async def wait_connected(self) -> LiveConnection:
        while self.conn is None:
            await self._ready.wait()
        return self.conn

    async def send_forever(self) -> None:
        """Send the outbox, in order, to whichever connection is up."""
        while True:
            await self.outbox.wait_nonempty()
            conn = await self.wait_connected()
            item = self.outbox.pop()
            if item is None:
                continue
            try:
                await conn.send(self.outbox.wire(item))
            except ConnectionLost as exc:
                self.outbox.push_front(item)
                if conn is self.conn:
                    self._send_failure = exc
                    self._clear_conn()
                    if self._recv_scope is not None:
                        self._recv_scope.cancel()
                continue
            except Exception as exc:
                # A message the connection cannot encode is a bug to report, not a reason
                # to retry it forever and block everything behind it.
                self._emit(ErrorEvent(message=short_error(exc, self.config.secrets), where="send"))
                log.exception("dropping a message the model connection refused")
                self.outbox.mark_dropped()
                continue
            self.outbox.mark_sent()

    async def close(self) -> None:
        """Stop receiving and close the connection (queued answers were given their chance)."""
        self.closing = True
        conn = self.conn
        self._clear_conn()
        if self._recv_scope is not None:
            self._recv_scope.cancel()
        if conn is not None:
            with anyio.move_on_after(2.0):
                await conn.close()
        self._set_state("closed")


__all__ = ["ModelLink"]
