"""The model connection of a session: connect, send, receive, reconnect — for as long as it runs.

The model may be absent, connecting, unreachable or connected at any moment,
and none of these stops the session: tools, device calls and the event log
work without it. ``ModelLink.run`` keeps (re)connecting with backoff and
resumes with the newest session handle (``live/link/resumption.py``: which handle,
and whether it is still valid); ``ModelLink.send_forever`` sends the outbox to
whatever connection is up (``live/link/send_loop.py``). Only a ``ReconnectPolicy``
with ``max_attempts`` makes it give up, and then ``failure`` says why.

Whatever the model does, the link raises nothing: a connection attempt or a
connection that fails in a way nobody foresaw is one more failure, retried.
How each failure is counted and said, how long the next attempt waits and when
the link gives up: ``live/link/failures.py``. A GoAway on a connection that
lasted is met by opening the resumed connection beside it and switching over
once it is set up (``live/link/handover.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup

from live.config import SessionConfig
from live.events import ConnectionState, Event
from live.link.failures import Failed, LinkFailures
from live.link.handover import open_resumed, why_not
from live.link.outbox import Outbox
from live.link.resumption import Resumption
from live.link.send_loop import SendLoop
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
from live.util.clock import Clock
from live.util.redact import redact, short_error
from live.util.signal import Wakeup

log = logging.getLogger("lookout.connection")


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
        self._resumption = Resumption(clock, self.policy.handle_valid_s)
        self._switched_to: LiveConnection | None = None  # a GoAway's resumed connection
        self._handing_over = False
        self.reconnects = 0
        self.closing = False
        self.conn: LiveConnection | None = None
        self._ready = Wakeup()
        self._recv_scope: anyio.CancelScope | None = None
        self._send_failure: ConnectionLost | None = None
        self._connected_before = False
        self._failures = LinkFailures(
            self.policy, clock.now, set_state=self._set_state, emit=emit, secrets=config.secrets
        )
        self._sender = SendLoop(
            outbox,
            current=lambda: self.conn,
            wait_connected=self.wait_connected,
            lost=self._lost_in_send,
            emit=emit,
            secrets=config.secrets,
        )
        # The current connection was said to be connected (its end is then said too).
        self._announced = False
        self._stable = False

    @property
    def connected(self) -> bool:
        return self.conn is not None

    @property
    def resumption_handle(self) -> str | None:
        """The handle the next connection resumes with (None: a fresh session)."""
        return self._resumption.handle

    @property
    def failure(self) -> str | None:
        """Why the link gave up (None: it has not)."""
        return self._failures.failure

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
        say: bool = True,
    ) -> None:
        """The link's state; ``say`` False keeps it off the event log (a retry in a run)."""
        if state != self.state:
            self.since = self.clock.now()
        self.state = state
        self.outbox.poke()
        if not say:
            return
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
        delay = 0.0
        after_loss = False
        while not self.closing:
            if delay > 0:
                await self.clock.sleep(delay)
            attempt = self._failures.count + 1
            self._set_state(
                "reconnecting" if after_loss else "connecting",
                attempt=attempt,
                say=self._failures.count == 0,
            )
            outcome = await self._attempt()
            if isinstance(outcome, Failed):
                wait = self._failures.attempt_failed(outcome, attempt)
                if wait is None:
                    await anyio.lowlevel.checkpoint()
                    return
                delay = wait
                continue
            conn: LiveConnection = outcome
            while True:
                lost, lasted_s = await self._serve(conn, attempt)
                switched, self._switched_to = self._switched_to, None
                if switched is None:
                    break
                if self.closing:
                    await self._close_quietly(switched)
                    return
                conn = switched  # resumed before the cut: serve it, no outage
                self.reconnects += 1
            if self.closing:
                return
            after_loss = True
            next_delay = self._failures.after_loss(
                lost, lasted_s, attempt, stable=self._stable, announced=self._announced
            )
            if next_delay is None:
                return
            delay = next_delay

    async def _attempt(self) -> LiveConnection | Failed:
        """One connection attempt (a refused resumption handle is retried fresh at once)."""
        for _ in range(2):
            self._resumption.forget_if_expired()
            resuming = self._resumption.handle is not None
            setup = self._setup()
            try:
                with self.clock.fail_after(self.policy.connect_timeout_s):
                    conn = await self.model.connect(setup)
            except TimeoutError:
                return Failed(f"no answer to setup within {self.policy.connect_timeout_s:g} s")
            except ModelSetupError as exc:
                if resuming:
                    # An expired or foreign handle is refused like a bad setup; a fresh
                    # session may still work, and there is no reason to wait for it.
                    log.warning("%s; starting a fresh session", self._redact(f"resuming: {exc}"))
                    self._resumption.forget()
                    continue
                return Failed(self._redact(f"model refused the session: {exc}"), refused=True)
            except ConnectionLost as exc:
                return Failed(self._redact(exc.reason), refused=not exc.retryable)
            except Exception as exc:
                # OSError, or anything a model raised that it should have called a loss:
                # one more failed attempt, never the end of the device.
                if not isinstance(exc, OSError):
                    log.warning("connecting to the model failed unexpectedly", exc_info=True)
                return Failed(short_error(exc, self.config.secrets))
            if not (resuming and self._resumption.handle is not None):
                # A new model session never issued our running call ids.
                self._on_fresh_session()
            if self._connected_before:
                self.reconnects += 1
            self._connected_before = True
            return conn
        return Failed("model refused the session")

    # ------------------------------------------------------------- serving

    async def _serve(self, conn: LiveConnection, attempt: int) -> tuple[ConnectionLost, float]:
        """Receive until the connection is lost: how it ended, and how long it lasted."""
        self._send_failure = None
        self._handing_over = False
        self._set_conn(conn)
        started = self.clock.now()
        self._stable = False
        # In a run that has seen a connection end too soon, this one is said once it lasts.
        self._announced = not self._failures.flapping
        self._set_state(
            "connected", attempt=attempt, reason=self._failures.summary(), say=self._announced
        )
        lost: ConnectionLost = ConnectionLost("the model closed the connection")
        with anyio.CancelScope() as scope:
            self._recv_scope = scope
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_stable, attempt)
                lost = await self._receive(conn, tg)
                tg.cancel_scope.cancel()
        if scope.cancelled_caught:
            lost = self._send_failure or ConnectionLost("send failed")
        lasted_s = self.clock.now() - started
        self._recv_scope = None
        if self.conn is conn:
            self._clear_conn()
        await self._close_quietly(conn)
        if not self.closing and self._switched_to is None:
            self.outbox.drop_frames()
        return lost, lasted_s

    async def _close_quietly(self, conn: LiveConnection) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
            try:
                await conn.close()
            except Exception as exc:
                log.warning("closing the model connection: %s", short_error(exc))

    async def _hand_over(self, old: LiveConnection, time_left_s: float | None) -> None:
        """Open the resumed connection beside ``old``; once set up, move the outbox to it.

        If it cannot be opened before the cut, ``old`` ends now and the link reconnects
        as it always did.
        """
        within = self.policy.connect_timeout_s
        if time_left_s is not None:
            within = min(within, time_left_s)
        new = await open_resumed(self.model, self._setup(), self.clock, within)
        with anyio.CancelScope(shield=True):
            if new is None:
                lost = ConnectionLost("server sent GoAway; the resumed connection did not open")
                if self.conn is old and self._recv_scope is not None:
                    self._send_failure = lost
                    self._recv_scope.cancel()
                return
            async with self._sender.lock:
                if self.closing:
                    await self._close_quietly(new)
                    return
                # No send is in flight on ``old``: everything after this goes to ``new``.
                self._switched_to = new
                self._set_conn(new)
            if self._recv_scope is not None:
                self._recv_scope.cancel()

    async def _receive(self, conn: LiveConnection, tg: TaskGroup) -> ConnectionLost:
        """Hand the connection's events on until it ends; how it ended (never raises).

        A GoAway that can be met by a switch-over starts one and reading goes on.
        """
        try:
            async with contextlib.aclosing(conn.receive()) as events:  # type: ignore[type-var]
                async for event in events:
                    if isinstance(event, ModelGoAway):
                        if self._handing_over:
                            continue
                        self._set_state(
                            "go_away", reason=f"time left {event.time_left_s}", say=self._announced
                        )
                        why = why_not(
                            event,
                            stable=self._stable,
                            handle=self._resumption.handle,
                            newest_resumable=self._resumption.newest_resumable,
                        )
                        if why is None:
                            self._handing_over = True
                            tg.start_soon(self._hand_over, conn, event.time_left_s)
                            continue
                        log.log(
                            logging.INFO if self._stable else logging.DEBUG,
                            "GoAway: reconnecting now (%s)",
                            why,
                        )
                        return ConnectionLost("server sent GoAway")
                    if isinstance(event, ModelResumptionUpdate):
                        self._resumption.update(event)
                        continue
                    self._on_event(event)
        except ConnectionLost as exc:
            return exc
        except Exception as exc:
            # A model (or what it said) failing in a way nobody foresaw: that connection
            # is over, the device is not. The traceback is for whoever fixes it.
            log.warning("the model connection failed unexpectedly", exc_info=True)
            return ConnectionLost(
                f"the model connection failed: {short_error(exc, self.config.secrets)}"
            )
        return ConnectionLost("the model closed the connection")

    async def _watch_stable(self, attempt: int) -> None:
        """After ``stable_after_s`` the connection has lasted: the run of failures is over."""
        await self.clock.sleep(self.policy.stable_after_s)
        self._stable = True
        if not self._announced:
            self._announced = True
            self._set_state("connected", attempt=attempt, reason=self._failures.summary())
        self._failures.lasted()

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
        """Send the outbox, in order, to whichever connection is up (``live/link/send_loop.py``)."""
        await self._sender.run()

    def _lost_in_send(self, conn: LiveConnection, lost: ConnectionLost) -> None:
        """A send found ``conn`` lost: if it is still the one served, serving it ends."""
        if conn is self.conn:
            self._send_failure = lost
            self._clear_conn()
            if self._recv_scope is not None:
                self._recv_scope.cancel()

    async def close(self) -> None:
        """Stop receiving and close the connection (queued answers were given their chance)."""
        self.closing = True
        conn = self.conn
        self._clear_conn()
        if self._recv_scope is not None:
            self._recv_scope.cancel()
        if conn is not None:
            with anyio.move_on_after(2.0):
                try:
                    await conn.close()
                except Exception as exc:
                    log.warning("closing the model connection: %s", short_error(exc))
        # A run of failures is said at its 1st, 10th, 100th...: its count at the end too.
        self._set_state("closed", reason=self._failures.at_close())


__all__ = ["ModelLink"]
