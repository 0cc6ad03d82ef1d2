"""What is said about publishing to MQTT: on the console once per change, in ``/healthz`` while
it lasts, and at exit, what never reached the broker.

Nothing is lost or refused silently: a broker that refuses the password, one that
cannot be reached, one that keeps closing the connection right after it is made,
another process publishing as this device id, events pushed out of a full queue
or still waiting at exit. Each is one console line when it begins (and one when
it ends, where that is news), a reason in ``problems`` (``/healthz`` says
``degraded``), and counted in ``MqttStats`` (``/metrics``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from live.util.clock import Clock
from live.util.plural import counted

log = logging.getLogger("lookout.mqtt")

FLAPPING = 3  # connections in a row closed right after they were made


@dataclass
class MqttStats:
    connected: bool = False
    connects: int = 0
    published: int = 0  # messages the broker acknowledged
    events: int = 0  # events queued in all (what ``dropped`` is out of)
    dropped: int = 0  # events that never reached the broker: the queue overflowed, or at exit
    lost_at_exit: int = 0  # of those, still waiting when the process ended
    last_error: str = ""
    refused: str = ""  # the broker's refusal (a wrong password), until it accepts
    clash: str = ""  # another process publishes as this device id: this one stopped
    down_since: float | None = None  # wall clock of the failure that started an outage


def client_error(exc: BaseException) -> str:
    """What the client raised that is not an MQTT error, as one line: the first error of
    a task group's, its type and text (its traceback in the debug log)."""
    log.debug("MQTT client error", exc_info=exc)
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"the MQTT client failed: {type(exc).__name__}{': ' + text if text else ''}"


def mqtt_reason(exc: BaseException) -> str:
    """An MQTT error as a reader wants it: what happened, not where aiomqtt noticed it."""
    text = str(exc)
    if text.startswith(("Disconnected during", "[code:7]")) or "Unexpected disconnection" in text:
        return "the connection was lost"  # paho's reason then is "Unspecified error"
    return re.sub(r"^\[code:\d+\] ", "", text).rstrip(".") or type(exc).__name__


def clock_time(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))


class LinkHealth:
    """The publisher's connection and queue, as the user is told about them."""

    def __init__(
        self,
        broker: str,
        *,
        client_id: str,
        device_id: str,
        max_queue: int,
        stable_s: float,
        clock: Clock,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        self.broker = broker
        self.client_id = client_id
        self.device_id = device_id
        self.max_queue = max_queue
        self.stable_s = stable_s
        self.clock = clock
        self.announce = announce
        self.stats = MqttStats()
        self._outage = False  # said that the broker is away (said once per outage)
        self._dropping = 0  # events dropped since the queue last overflowed (0: not dropping)
        self._short = 0  # connections in a row closed right after they were made
        self._made_at: float | None = None  # when the broker accepted this connection

    def say(self, line: str) -> None:
        if self.announce is not None:
            self.announce(line)
        else:
            log.warning("%s", line.removeprefix("warning: "))

    # ----------------------------------------------------------- the connection

    def made(self) -> None:
        """The broker accepted a connection (it may still be found to be someone else's)."""
        self.stats.connects += 1
        self._made_at = self.clock.now()

    def up(self) -> None:
        """Publishing on this connection."""
        self.stats.connected = True
        if self.stats.refused:
            self.say(f"MQTT broker {self.broker} accepted the connection")
            self.stats.refused = ""
        elif self.flapping():
            pass  # each round of it is not news
        elif self._outage:
            self.say(f"MQTT broker {self.broker}: connected again")
        else:
            log.info("MQTT connected to %s as %s", self.broker, self.client_id)
        self._outage = False
        self.stats.down_since = None

    def ended(self) -> bool:
        """The connection (or the attempt) ended; True if it had held for ``stable_s``
        (a new outage then starts with a short wait)."""
        self.stats.connected = False
        made, self._made_at = self._made_at, None
        if made is None:
            return False
        if self.clock.now() - made >= self.stable_s:
            self._short = 0
            return True
        # Another client with this client id does this: each connect drops the other.
        self._short += 1
        if self._short == FLAPPING:
            self.say(
                f"warning: MQTT broker {self.broker} closed the connection right after it was "
                f"made, {FLAPPING} times in a row: is another client connecting as "
                f"{self.client_id} (another device with device id '{self.device_id}')? "
                "Reconnecting less often"
            )
        return False

    def flapping(self) -> bool:
        return self._short >= FLAPPING

    def holding(self) -> bool:
        """Connected for ``stable_s`` already: whatever closed connections before has stopped."""
        made = self._made_at
        return (
            self.stats.connected and made is not None and self.clock.now() - made >= self.stable_s
        )

    def failed(self, reason: str) -> None:
        self.stats.last_error = reason
        if self.stats.down_since is None:
            self.stats.down_since = time.time()
        if not self._outage and not self.flapping():
            # Once per outage: a broker away for an hour must not flood the log.
            self.say(f"warning: MQTT broker {self.broker}: {reason}; reconnecting")
            self._outage = True

    def refused(self, reason: str) -> None:
        self.stats.last_error = f"refused: {reason}"
        if self.stats.down_since is None:
            self.stats.down_since = time.time()
        if self.stats.refused != reason:
            self.stats.refused = reason
            self.say(
                f"warning: MQTT broker {self.broker} refused the connection: {reason} "
                "(check the user and password in --mqtt); retrying now and then"
            )
        self._outage = True

    def clash(self, line: str) -> None:
        self.stats.clash = line
        self.say(f"warning: {line}")

    # ---------------------------------------------------------------- the queue

    def dropped(self, count: int) -> None:
        """Events pushed out of a full queue: counted, and said when it starts."""
        if not count:
            return
        self.stats.dropped += count
        if not self._dropping:
            why = "" if self.stats.connected else f" ({self.stats.last_error or 'not connected'})"
            self.say(
                f"warning: MQTT: {counted(self.max_queue, 'event')} are waiting for "
                f"{self.broker}{why}; "
                "dropping the oldest from now on (the count, line totals and zones are kept)"
            )
        self._dropping += count

    def caught_up(self) -> None:
        if self._dropping:
            self.say(
                f"MQTT: caught up with {self.broker}; {counted(self._dropping, 'event')} dropped"
            )
            self._dropping = 0

    def lost_at_exit(self, count: int) -> None:
        if not count:
            return
        self.stats.lost_at_exit += count
        self.stats.dropped += count
        self.say(
            f"warning: MQTT: {counted(count, 'event')} still waiting at exit did not reach "
            f"{self.broker}"
        )

    # ------------------------------------------------------------------ reading

    def problems(self) -> list[str]:
        """What is wrong with publishing now (the page and /healthz say it: degraded)."""
        stats = self.stats
        found: list[str] = []
        if stats.clash:
            found.append(stats.clash)
        elif stats.refused:
            found.append(f"MQTT broker {self.broker} refused the connection: {stats.refused}")
        elif self.flapping() and not self.holding():
            found.append(
                f"MQTT broker {self.broker} closes the connection right after it is made "
                f"({self._short} times in a row): is another client connecting as "
                f"{self.client_id}?"
            )
        elif not stats.connected and stats.down_since is not None:
            since = clock_time(stats.down_since)
            found.append(
                f"MQTT broker {self.broker} unreachable since {since} ({stats.last_error})"
            )
        if stats.dropped:
            found.append(f"MQTT: {counted(stats.dropped, 'event')} dropped")
        return found

    def undelivered(self) -> str | None:
        """Why some events never reached the broker (None: every one did); at exit."""
        stats = self.stats
        if not stats.dropped:
            return None
        parts = []
        overflow = stats.dropped - stats.lost_at_exit
        if overflow:
            parts.append(f"{overflow:,} dropped from a full queue")
        if stats.lost_at_exit:
            parts.append(f"{stats.lost_at_exit:,} still waiting at exit")
        why = ""
        if stats.clash:
            why = f": {stats.clash}"
        elif stats.refused:
            why = f": it refused the connection ({stats.refused})"
        elif stats.down_since is not None:
            why = f": unreachable since {clock_time(stats.down_since)} ({stats.last_error})"
        return (
            f"MQTT: {stats.dropped:,} of {counted(stats.events, 'event')} did not reach "
            f"{self.broker} "
            f"({', '.join(parts)}){why}"
        )


__all__ = ["LinkHealth", "MqttStats", "client_error", "clock_time", "mqtt_reason"]
