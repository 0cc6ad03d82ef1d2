"""Where an occupancy report's per-minute counts are kept: in memory, or in SQLite.

``fetch_counts`` pages a report's counts from here while the report still runs,
and, with SQLite, a later ``lookout ask --db`` can page them after a restart.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol

from live.store.database import SQLiteStore


class OccupancyLog(Protocol):
    def put_bucket(self, job_id: str, bucket: dict[str, Any]) -> None: ...

    def finish(self, job_id: str) -> None: ...

    def buckets(self, job_id: str) -> tuple[list[dict[str, Any]], bool] | None:
        """A job's buckets so far and whether the job has finished; None if unknown."""
        ...

    def job_ids(self) -> list[str]: ...


class MemoryOccupancyLog:
    def __init__(self) -> None:
        self._jobs: dict[str, tuple[dict[int, dict[str, Any]], bool]] = {}
        self._lock = threading.Lock()

    def put_bucket(self, job_id: str, bucket: dict[str, Any]) -> None:
        with self._lock:
            buckets, _ = self._jobs.setdefault(job_id, ({}, False))
            buckets[int(bucket["period"])] = dict(bucket)

    def finish(self, job_id: str) -> None:
        with self._lock:
            buckets, _ = self._jobs.get(job_id, ({}, False))
            self._jobs[job_id] = (buckets, True)

    def buckets(self, job_id: str) -> tuple[list[dict[str, Any]], bool] | None:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry is None:
                return None
            return [dict(entry[0][k]) for k in sorted(entry[0])], entry[1]

    def job_ids(self) -> list[str]:
        with self._lock:
            return list(self._jobs)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS occupancy_jobs (
    job_id TEXT PRIMARY KEY,
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS occupancy_periods (
    job_id TEXT NOT NULL,
    period INTEGER NOT NULL,
    start_s REAL NOT NULL,
    end_s REAL NOT NULL,
    samples INTEGER NOT NULL,
    min INTEGER,
    max INTEGER,
    mean REAL,
    PRIMARY KEY (job_id, period)
);
"""


_ADD_JOB = "INSERT INTO occupancy_jobs(job_id) VALUES (?) ON CONFLICT DO NOTHING"
_PUT_PERIOD = "INSERT OR REPLACE INTO occupancy_periods VALUES (?,?,?,?,?,?,?,?)"
_FINISH = (
    "INSERT INTO occupancy_jobs(job_id, finished) VALUES (?, 1) "
    "ON CONFLICT(job_id) DO UPDATE SET finished = 1"
)
_PERIOD_KEYS = ("period", "start_s", "end_s", "samples", "min", "max", "mean")
KIND = "occupancy period"  # the store counts (and drops) rows by kind


class SQLiteOccupancyLog:
    """Per-minute counts in SQLite, so a later ``lookout ask --db`` can page them.

    A view over the file's ``SQLiteStore`` (shared with the event log and the
    job store). Writes wait for their commit unless the store is failing; what
    is not yet written is kept here too, so ``fetch_counts`` still sees it.
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
        # Not yet known to be written, newest per key: (seq, bucket) and (seq, finished).
        self._unsaved_periods: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
        self._unsaved_jobs: dict[str, tuple[int, bool]] = {}
        self._closed = False

    @property
    def store(self) -> SQLiteStore:
        return self._store

    def put_bucket(self, job_id: str, bucket: dict[str, Any]) -> None:
        row = (job_id, *(bucket[k] for k in _PERIOD_KEYS))
        with self._lock:
            self._store.write(KIND, "job", _ADD_JOB, (job_id,))
            seq = self._store.write(KIND, "period", _PUT_PERIOD, row)
            self._unsaved_periods[(job_id, int(bucket["period"]))] = (seq, dict(bucket))
            _, finished = self._unsaved_jobs.get(job_id, (0, False))
            self._unsaved_jobs[job_id] = (seq, finished)
        self._store.wait_settled(seq, self._put_timeout_s, unless_failing=True)

    def finish(self, job_id: str) -> None:
        with self._lock:
            seq = self._store.write(KIND, "finish", _FINISH, (job_id,))
            self._unsaved_jobs[job_id] = (seq, True)
        self._store.wait_settled(seq, self._put_timeout_s, unless_failing=True)

    def _prune(self) -> tuple[dict[str, int], dict[tuple[str, int], int]]:
        """What has settled now, to forget once a read that began after it returns."""
        with self._lock:
            settled = self._store.settled
            jobs = {k: seq for k, (seq, _) in self._unsaved_jobs.items() if settled(seq)}
            periods = {k: seq for k, (seq, _) in self._unsaved_periods.items() if settled(seq)}
        return jobs, periods

    def _forget(self, jobs: dict[str, int], periods: dict[tuple[str, int], int]) -> None:
        with self._lock:
            for job_id, seq in jobs.items():
                if self._unsaved_jobs.get(job_id, (None, False))[0] == seq:
                    del self._unsaved_jobs[job_id]
            for key, seq in periods.items():
                if self._unsaved_periods.get(key, (None, {}))[0] == seq:
                    del self._unsaved_periods[key]

    def buckets(self, job_id: str) -> tuple[list[dict[str, Any]], bool] | None:
        def query(conn: sqlite3.Connection) -> tuple[bool, list[tuple[Any, ...]]] | None:
            row = conn.execute(
                "SELECT finished FROM occupancy_jobs WHERE job_id = ?", (job_id,)
            ).fetchone()
            if row is None:
                return None
            rows = conn.execute(
                "SELECT period, start_s, end_s, samples, min, max, mean FROM occupancy_periods "
                "WHERE job_id = ? ORDER BY period",
                (job_id,),
            ).fetchall()
            return bool(row[0]), rows

        settled = self._prune()
        found = self._store.read(query)
        self._forget(*settled)
        with self._lock:
            job = self._unsaved_jobs.get(job_id)
            extra = {p: b for (j, p), (_, b) in self._unsaved_periods.items() if j == job_id}
        if found is None and job is None:
            return None
        finished = (found is not None and found[0]) or (job is not None and job[1])
        periods = (
            {int(r[0]): dict(zip(_PERIOD_KEYS, r, strict=True)) for r in found[1]} if found else {}
        )
        periods.update((p, dict(b)) for p, b in extra.items())
        return [periods[p] for p in sorted(periods)], finished

    def job_ids(self) -> list[str]:
        settled = self._prune()
        found = self._store.read(
            lambda conn: [str(r[0]) for r in conn.execute("SELECT job_id FROM occupancy_jobs")]
        )
        self._forget(*settled)
        with self._lock:
            extra = [j for j in self._unsaved_jobs if j not in found]
        return found + extra

    def close(self, timeout: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        self._store.release(timeout)


__all__ = ["KIND", "MemoryOccupancyLog", "OccupancyLog", "SQLiteOccupancyLog"]
