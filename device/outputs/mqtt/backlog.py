"""What waits for the MQTT broker: state that only matters at its newest, events that all do.

Two kinds of entries wait in one order:

- **state** (a retained topic, or a group of them the publisher builds when it
  sends: the count with its ``counting``, a line's totals, a zone's state): only
  the newest value matters, so a newer one takes the older one's place in the
  line (it never goes to the back, so a value that changes all the time is still
  sent). Their number is bounded by the number of topics, so they never overflow.
- **events** (the events topic, crossings, dwells): each one counts, none is
  merged. They are bounded: past ``max_events`` the oldest goes, and is counted.

Nothing here does I/O; the publisher takes entries in order, sends them, and
puts back what a lost connection left unacknowledged.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = False


@dataclass
class Entry:
    """One place in the line: an event, a retained message, or a state group (``message``
    None: the publisher builds its messages from the current state when it sends it)."""

    key: Hashable
    message: Message | None = None
    event: bool = False
    force: bool = field(default=False)  # send even what the broker already has (a heartbeat)


class Backlog:
    """Entries in the order they are to be sent; state coalesced in place, events bounded."""

    def __init__(self, max_events: int) -> None:
        self.max_events = max_events
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._events: deque[Hashable] = deque()  # event keys, oldest first
        self._serial = 0
        self.dropped = 0  # events that went because the line was full
        self.coalesced = 0  # state values a newer one replaced before they were sent

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    @property
    def events(self) -> int:
        """Events waiting (each one would be lost if the process ended now)."""
        return len(self._events)

    def put_event(self, message: Message) -> int:
        """Queue an event; returns how many old events it pushed out (0 normally)."""
        self._serial += 1
        key = ("event", self._serial)
        self._entries[key] = Entry(key, message, event=True)
        self._events.append(key)
        return self._trim()

    def put_state(self, key: Hashable, message: Message | None = None, force: bool = False) -> None:
        """Queue a state's newest value; one already waiting is replaced where it stands."""
        waiting = self._entries.get(key)
        if waiting is None:
            self._entries[key] = Entry(key, message, force=force)
            return
        self.coalesced += 1
        waiting.message = message
        waiting.force = waiting.force or force

    def take(self) -> Entry | None:
        if not self._entries:
            return None
        _, entry = self._entries.popitem(last=False)
        if entry.event:
            self._events.popleft()
        return entry

    def put_back(self, entries: Iterable[Entry]) -> int:
        """Entries sent but not acknowledged go back to the front, in their order. A state
        with a newer value waiting stays out (the newer one says it). Returns the events
        this pushed out."""
        for entry in reversed(list(entries)):
            if entry.key in self._entries:
                continue
            self._entries[entry.key] = entry
            self._entries.move_to_end(entry.key, last=False)
            if entry.event:
                self._events.appendleft(entry.key)
        return self._trim()

    def discard(self, keys: Iterable[Hashable]) -> None:
        """Forget these states (what the publisher is about to say in full anyway)."""
        for key in keys:
            entry = self._entries.pop(key, None)
            if entry is not None and entry.event:
                self._events.remove(key)

    def states(self) -> list[Hashable]:
        return [key for key, entry in self._entries.items() if not entry.event]

    def clear_events(self) -> int:
        """Drop every waiting event (the process ends); returns how many."""
        gone = len(self._events)
        for key in self._events:
            del self._entries[key]
        self._events.clear()
        return gone

    def _trim(self) -> int:
        gone = 0
        while len(self._events) > self.max_events:
            del self._entries[self._events.popleft()]
            gone += 1
        self.dropped += gone
        return gone


__all__ = ["Backlog", "Entry", "Message"]
