"""The run's event logs (``--events`` JSONL, ``--db`` SQLite): opened, followed, checked.

``EventLogs.open`` refuses what the user asked to be written but cannot be
(one line, before the first frame), opens both logs and subscribes them to the
bus. While the run goes on it says what is wrong with them (the page, /healthz
and /metrics read ``problems`` and ``counts``); at the end, whether they miss
events (exit 3). A log's writer thread reports a problem through the loop the
run is on (``bind_loop``), as a ``LogProblem`` event.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from device.bus import EventBus
from device.config import Config
from device.config.paths import check_writable_file, open_output
from device.events import LogProblem
from device.outputs.sinks import JsonlSink
from live.store.eventlog import SQLiteEventLog
from live.util.plural import counted

log = logging.getLogger("lookout.app")

# After SIGTERM/SIGINT, what the event log has not written by then is counted lost (and
# said, exit 3): a database another process holds locked must not hold the exit.
SIGNAL_FLUSH_S = 0.5
EXIT_FLUSH_S = 5.0  # a run that ends by itself waits this long for the database


@dataclass(frozen=True)
class LogCounts:
    """One log's counts, for /metrics."""

    log: str  # "db" or "jsonl"
    written: int
    lost: int
    pending: int
    failing: bool


class EventLogs:
    """The JSONL and SQLite event logs of one run (either may be absent)."""

    def __init__(
        self,
        config: Config,
        reporter: _ProblemReporter,
        jsonl: JsonlSink | None,
        db: _DatabaseSink | None,
    ) -> None:
        self.config = config
        self.jsonl = jsonl
        self._db_sink = db
        self.db = db.db if db is not None else None
        self._reporter = reporter

    @classmethod
    def open(cls, config: Config, bus: EventBus, run_id: str) -> EventLogs:
        """Open the configured logs and subscribe them to ``bus``; raises for a bad path."""
        reporter = _ProblemReporter(bus)
        jsonl: JsonlSink | None = None
        db: _DatabaseSink | None = None
        # What the user asked to be written must be writable: said now, in one line.
        if config.outputs.events is not None:
            check_writable_file("events", config.outputs.events)
            jsonl = open_output(
                "events", config.outputs.events, lambda p: JsonlSink(p, on_problem=reporter.problem)
            )
        if config.outputs.db is not None:
            check_writable_file("db", config.outputs.db, "database file")
            db = _DatabaseSink(
                open_output(
                    "db",
                    config.outputs.db,
                    lambda p: SQLiteEventLog(p, session=run_id, on_problem=reporter.problem),
                )
            )
        for sink in (jsonl, db):
            if sink is not None:
                bus.subscribe(sink)
        return cls(config, reporter, jsonl, db)

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the run is on: the logs' writer threads report problems through it."""
        self._reporter.loop = loop

    def hurry(self) -> None:
        """A signal stops the run: closing waits only a moment for the database."""
        if self._db_sink is not None:
            self._db_sink.budget_s = SIGNAL_FLUSH_S

    def follow_names(self) -> None:
        """Check each log against its file name now (SIGHUP after a rotation)."""
        if self.jsonl is not None:
            self.jsonl.follow_name()

    def problems(self) -> list[str]:
        """What is wrong with the event logs right now (the page and /healthz say it)."""
        problems = []
        if self.db is not None:
            health = self.db.health()
            if health.degraded:
                problems.append(
                    f"event log {self.config.outputs.db}: {health.last_error}; "
                    f"{counted(health.pending, 'event')} waiting"
                )
            if health.dropped:
                problems.append(
                    f"event log {self.config.outputs.db}: {counted(health.dropped, 'event')} lost"
                )
        if self.jsonl is not None and (self.jsonl.degraded or self.jsonl.lost):
            why = f": {self.jsonl.last_error}" if self.jsonl.degraded else ""
            lost = f"{self.jsonl.lost:,} lines lost"
            problems.append(f"events file {self.config.outputs.events}{why}; {lost}")
        return problems

    def counts(self) -> list[LogCounts]:
        """Each open log's written, lost and waiting events (for /metrics)."""
        counts = []
        if self.db is not None:
            health = self.db.health()
            counts.append(
                LogCounts("db", health.written, health.dropped, health.pending, health.degraded)
            )
        if self.jsonl is not None:
            jsonl = self.jsonl
            counts.append(LogCounts("jsonl", jsonl.written, jsonl.lost, 0, jsonl.degraded))
        return counts

    def incomplete(self) -> str | None:
        """Why the run's event logs miss events (None when they are complete)."""
        problems = []
        if self.db is not None and not self.db.complete:
            health = self.db.health()
            problems.append(
                f"{self.config.outputs.db}: {counted(health.dropped, 'event')} lost "
                f"({health.last_error})"
            )
        if self.jsonl is not None and not self.jsonl.complete:
            events = self.config.outputs.events
            problems.append(f"{events}: {self.jsonl.lost:,} lines lost ({self.jsonl.last_error})")
        return "; ".join(problems) or None


class _ProblemReporter:
    """Says a log's problem on the bus, from the store's writer thread, through the loop."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.loop: asyncio.AbstractEventLoop | None = None  # the run's, once it runs

    def problem(self, kind: str, message: str) -> None:
        """A log started or stopped failing (called from the store's writer thread)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            log.warning("%s", message)
            return
        loop.call_soon_threadsafe(self._say, kind, message)

    def _say(self, kind: str, message: str) -> None:
        self.bus.publish(LogProblem(kind=kind, message=message))


@dataclass
class _DatabaseSink:
    """The SQLite event log as a bus subscriber; closing waits at most ``budget_s``."""

    db: SQLiteEventLog
    # How long closing may wait for the database to catch up: a run that ends by itself
    # waits for it; one stopped by a signal has promised to exit in 2 s (``hurry``).
    budget_s: float = EXIT_FLUSH_S

    def write(self, event: Any) -> None:
        self.db.record(event)

    def close(self) -> None:
        self.db.close(self.budget_s)


__all__ = ["EXIT_FLUSH_S", "SIGNAL_FLUSH_S", "EventLogs", "LogCounts"]
