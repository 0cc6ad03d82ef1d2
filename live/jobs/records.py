"""Long-running jobs: their record and where it is kept.

A long-running tool answers its call at once with a ticket; the work runs as a
job in the runner's task group. The job store holds each job's state and final
result so that a result outlives a failed model call and, with SQLite, the
process (``lookout ask --db`` can page a report made by an earlier run).
Stores are synchronous and small: callers on the event loop reach them through
``anyio.to_thread``.
"""

from __future__ import annotations

import enum
import json
import math
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from live.events import jsonable
from live.store.database import SQLiteStore

T = TypeVar("T")


class JobState(enum.StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self is not JobState.RUNNING


@dataclass
class Job:
    job_id: str
    call_id: str
    name: str
    args: dict[str, Any]
    state: JobState = JobState.RUNNING
    started_at: float = 0.0  # wall-clock seconds (time.time), comparable across processes
    ended_at: float | None = None
    fraction: float | None = None
    message: str = ""
    result: dict[str, Any] | None = None
    error: str | None = None
    delivered: bool = False  # the final result reached the model
    extra: dict[str, Any] = field(default_factory=dict)

    def ticket(self) -> dict[str, Any]:
        """What the model gets at once, instead of waiting for the work."""
        return {"job_id": self.job_id, "status": "started"}

    def final_response(self) -> dict[str, Any]:
        """What the model gets when the job has ended (same call id as the ticket)."""
        response: dict[str, Any] = {"job_id": self.job_id, "status": self.state.value}
        if self.state is JobState.SUCCEEDED:
            response.update(self.result or {})
            response["job_id"], response["status"] = self.job_id, self.state.value
        elif self.error:
            response["error"] = self.error
        return response

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "call_id": self.call_id,
            "name": self.name,
            "args": jsonable(self.args),
            "state": self.state.value,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "fraction": self.fraction,
            "message": self.message,
            "result": jsonable(self.result),
            "error": self.error,
            "delivered": self.delivered,
            "extra": jsonable(self.extra),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        return cls(
            job_id=data["job_id"],
            call_id=data["call_id"],
            name=data["name"],
            args=dict(data.get("args") or {}),
            state=JobState(data["state"]),
            started_at=float(data.get("started_at") or 0.0),
            ended_at=data.get("ended_at"),
            fraction=data.get("fraction"),
            message=data.get("message") or "",
            result=data.get("result"),
            error=data.get("error"),
            delivered=bool(data.get("delivered")),
            extra=dict(data.get("extra") or {}),
        )


class ProgressThrottle:
    """At most one progress report per interval, so a job reporting per frame floods nothing.

    The report of completion (fraction 1.0) always passes.
    """

    def __init__(self, now: Callable[[], float], interval_s: float) -> None:
        self._now = now
        self._interval_s = interval_s
        self._last = -math.inf

    def admit(self, fraction: float | None) -> bool:
        """Whether this report goes out; one that does starts the next interval."""
        now = self._now()
        if now - self._last < self._interval_s and fraction != 1.0:
            return False
        self._last = now
        return True


class JobStore(Protocol):
    def put(self, job: Job) -> None:
        """Insert or replace the job's record."""
        ...

    def get(self, job_id: str) -> Job | None: ...

    def jobs(self) -> list[Job]:
        """Every job, oldest first."""
        ...

    def close(self) -> None: ...


class MemoryJobStore:
    def __init__(self) -> None:
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def put(self, job: Job) -> None:
        # A copy, so a job mutated later is not changed in the store behind its back.
        with self._lock:
            self._jobs[job.job_id] = job.to_dict()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            data = self._jobs.get(job_id)
        return Job.from_dict(data) if data is not None else None

    def jobs(self) -> list[Job]:
        with self._lock:
            return [Job.from_dict(d) for d in self._jobs.values()]

    def close(self) -> None:
        pass


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    data TEXT NOT NULL
);
"""


_UPSERT = (
    "INSERT INTO jobs(job_id, name, state, started_at, data) VALUES (?,?,?,?,?) "
    "ON CONFLICT(job_id) DO UPDATE SET state=excluded.state, data=excluded.data"
)
KIND = "job"  # the store counts (and drops) rows by kind


class SQLiteJobStore:
    """Jobs in a SQLite table: a view over the file's ``SQLiteStore``, shared with the event log.

    ``put`` waits for its commit (it is called from worker threads) but not on a
    store that is failing: then the job waits in the store's backlog and, until
    it is written, in memory here, so ``get`` and ``jobs`` still see it.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        store: SQLiteStore | None = None,
        put_timeout_s: float = 10.0,
    ) -> None:
        self.path = Path(path)
        self._store = SQLiteStore.for_view(self.path, _SCHEMA, store)
        self._put_timeout_s = put_timeout_s
        self._lock = threading.Lock()
        self._unsaved: dict[str, tuple[int, dict[str, Any]]] = {}  # job_id: (seq, record)
        self._closed = False

    @property
    def store(self) -> SQLiteStore:
        return self._store

    def put(self, job: Job) -> None:
        record = job.to_dict()
        params = (job.job_id, job.name, job.state.value, job.started_at, json.dumps(record))
        with self._lock:
            seq = self._store.write(KIND, job.state.value, _UPSERT, params)
            self._unsaved[job.job_id] = (seq, record)
        self._store.wait_settled(seq, self._put_timeout_s, unless_failing=True)

    def _read(
        self, query: Callable[[sqlite3.Connection], T]
    ) -> tuple[T, dict[str, dict[str, Any]]]:
        """The query's result and the puts it may not include yet (the newest per job)."""
        with self._lock:
            # Settled before the read began: the read has them (or they were dropped).
            settled = {k: seq for k, (seq, _) in self._unsaved.items() if self._store.settled(seq)}
        found = self._store.read(query)
        with self._lock:
            for job_id, seq in settled.items():
                if self._unsaved.get(job_id, (None,))[0] == seq:
                    del self._unsaved[job_id]
            unsaved = {k: record for k, (_, record) in self._unsaved.items()}
        return found, unsaved

    def get(self, job_id: str) -> Job | None:
        def query(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT data FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            return None if row is None else str(row[0])

        data, unsaved = self._read(query)
        if job_id in unsaved:
            return Job.from_dict(unsaved[job_id])
        return Job.from_dict(json.loads(data)) if data is not None else None

    def jobs(self) -> list[Job]:
        def query(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT data FROM jobs ORDER BY started_at, rowid").fetchall()
            return [str(r[0]) for r in rows]

        rows, unsaved = self._read(query)
        found = [json.loads(r) for r in rows]
        known = {d["job_id"] for d in found}
        merged = [unsaved.get(d["job_id"], d) for d in found]
        merged += [d for job_id, d in unsaved.items() if job_id not in known]
        # Stable: the table's order (started_at, rowid), jobs not yet written after their peers.
        merged.sort(key=lambda d: float(d.get("started_at") or 0.0))
        return [Job.from_dict(d) for d in merged]

    def close(self, timeout: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        self._store.release(timeout)


__all__ = ["Job", "JobState", "JobStore", "MemoryJobStore", "ProgressThrottle", "SQLiteJobStore"]
