"""The writer of one store: its queue, the one thread that commits it, and its retries.

Writes never block the caller: they queue for the writer thread, which commits
them in batched transactions. When it cannot write (another process holds the
lock, the disk is full, an I/O error) it keeps them in a bounded backlog,
retries with backoff and, once it can write again, catches up in order. What
the backlog cannot hold is dropped oldest first and counted by the ledger
(``live.store.ledger``), whose gap records go with the next batch. When to
retry and with how many rows is ``live.store.retry``'s to say.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from live.store.file import StoreError, Write, commit_batch, is_row_fault, one_line
from live.store.health import Notices, ProblemListeners
from live.store.identity import DELETED, HERE, HeldFile
from live.store.ledger import OVERFLOW, GapSnapshot, StoreLedger
from live.store.retry import WriteRetries
from live.util.backoff import Backoff

log = logging.getLogger("lookout.store")


class StoreWriter:
    """The queue of writes to one connection and the thread that commits them.

    ``SQLiteStore`` is one of these with a registry, schemas and reads on top;
    the writer owns the connection and closes it when its thread ends.

    Before each commit it looks whether the path still names the open database
    (``live.store.identity``): a database renamed or deleted while open would
    take every later row with it. Then the old connection is closed (its WAL
    checkpointed into the file, wherever it is) and ``reconnect`` opens a new
    database at the path; the rows this store had written to a deleted file are
    counted as dropped (recorded in the new file's ``store_gaps``) and said.
    """

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        *,
        reconnect: Callable[[], sqlite3.Connection],
        backlog: int,
        batch_size: int,
        busy_timeout_s: float,
        backoff: Backoff,
        clock: Callable[[], float],
        wall: Callable[[], float],
        sleep: Callable[[float], object] | None,
    ) -> None:
        self.path = path
        self.max_backlog = backlog
        self._wall = wall
        self._sleep = sleep
        self._conn: sqlite3.Connection | None = conn
        self._reconnect = reconnect
        # Which file the connection has open, to notice it leaving its name.
        self._file = HeldFile(path)
        self._file.hold()
        self._conn_lock = threading.Lock()  # held for each transaction and each read
        self._conn_closed = False
        self._cond = threading.Condition()  # guards everything below
        self._ledger = StoreLedger(path, backlog, clock=clock, wall=wall)
        self._retries = WriteRetries(
            backoff, batch_size=min(batch_size, backlog), busy_timeout_s=busy_timeout_s
        )
        self._listeners = ProblemListeners()  # its own lock: told with no lock held
        self._pending: deque[Write] = deque()
        self._inflight: list[Write] = []
        self._seq = 0
        self._stopping = False
        self._give_up = False
        self._finished = False  # the writer thread has ended
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lookout-store:{path.name}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------ queueing

    def write(self, kind: str, label: str, sql: str, params: tuple[Any, ...]) -> int:
        """Queue one statement for the writer thread; returns its sequence number at once."""
        with self._cond:
            self._seq += 1
            op = Write(self._seq, kind, label, sql, params)
            if self._stopping:
                # Nobody will write it; counted, so the loss is not silent.
                self._ledger.drop(op, "written after the store was closed", queued=False)
                return op.seq
            self._pending.append(op)
            self._ledger.queued(op)
            self._enforce_backlog()
            self._cond.notify_all()
            return op.seq

    def _enforce_backlog(self) -> None:
        """Drop the oldest rows waiting while more than the backlog wait."""
        # Rows in flight are not counted: if their commit fails they come back
        # to the front and are the oldest, so they go first.
        excess = len(self._pending) - self.max_backlog
        if excess <= 0:
            return
        for _ in range(min(excess, len(self._pending))):
            self._ledger.drop(self._pending.popleft(), OVERFLOW)

    def _settled_seq(self) -> int:
        """Every write up to this sequence number is committed or counted as dropped."""
        if self._inflight:
            return self._inflight[0].seq - 1
        if self._pending:
            return self._pending[0].seq - 1
        return self._seq

    def settled(self, seq: int) -> bool:
        with self._cond:
            return self._settled_seq() >= seq

    def wait_settled(
        self, seq: int, timeout: float, *, unless_failing: bool = False, gaps: bool = False
    ) -> bool:
        """Wait (real time) until write ``seq`` is committed or dropped; True if it is.

        With ``unless_failing`` return at once while writing fails, so a worker
        thread never waits on a retry loop it cannot shorten; with ``gaps`` wait
        for the records of dropped writes to be written too.
        """

        def done() -> bool:
            return self._settled_seq() >= seq and not (gaps and self._ledger.gaps)

        if threading.current_thread() is self._thread:
            with self._cond:  # a listener waiting on its own writer would hang
                return done()
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done():
                if self._finished or (unless_failing and self._ledger.degraded):
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far is written (or dropped); False on timeout."""
        with self._cond:
            target = self._seq
        return self.wait_settled(target, timeout, gaps=True)

    def _shut_down(self) -> None:
        with self._cond:
            self._stopping = True
            # Whatever is still queued after the flush cannot be written in time.
            self._give_up = bool(self._pending or self._inflight or self._ledger.gaps)
            self._cond.notify_all()
        self._wake.set()
        self._thread.join(2.0)
        if self._thread.is_alive():
            log.warning("%s: the writer did not stop in time; closing without it", self.path)

    # ------------------------------------------------------------ the thread

    def _run(self) -> None:
        try:
            while True:
                try:
                    if not self._cycle():
                        return
                except Exception as exc:  # the writer never dies; what it holds is requeued
                    if not self._unexpected(exc):
                        return
        finally:
            notices = self._last_look()
            with self._conn_lock:
                if self._conn is not None:
                    self._conn.close()
                self._conn_closed = True
                self._file.let_go()  # after the connection: see identity_fd
            with self._cond:
                self._finished = True
                self._cond.notify_all()
            self._listeners.tell(notices)

    def _cycle(self) -> bool:
        """One batch: take, write, account, report; False when the store is done."""
        with self._cond:
            # Gap records go with the next batch, or alone if no batch comes.
            while not (self._pending or self._ledger.gaps):
                if self._stopping:
                    return False
                self._cond.wait()
            if self._give_up:
                lost = self._lose_everything()
                batch = None
            else:
                limit = self._retries.batch_size(self._pending[0] if self._pending else None)
                batch = [self._pending.popleft() for _ in range(min(limit, len(self._pending)))]
                self._inflight = batch
                lost = []
                # Rows dropped while the writer was busy or backing off: say so first.
                self._ledger.notice_overflow(self._seq, lost)
        self._listeners.tell(lost)
        if batch is None:
            return False
        error = self._follow_name()
        if error is None:
            with self._cond:
                gaps = self._ledger.gap_snapshot()  # with those of a file just deleted
            error = self._commit(batch, gaps)
        notices: Notices = []
        pause = 0.0
        with self._cond:
            if error is None:
                self._succeeded(batch, gaps, notices)
            elif self._give_up:
                self._ledger.last_error = one_line(error)
                self._requeue(batch)
                notices.extend(self._lose_everything())
            elif is_row_fault(error):
                self._poisoned(batch, error, notices)
                pause = 0.0 if batch else self._retries.wait()
            elif self._retries.still_busy(error, degraded=self._ledger.degraded):
                self._requeue(batch)  # another slice of SQLite's busy wait, at once
            else:
                self._requeue(batch)
                self._failed(error, notices)
                pause = self._retries.wait()
            self._ledger.notice_overflow(self._seq, notices)
            self._cond.notify_all()
            stop = self._give_up and not (self._pending or self._inflight)
        self._listeners.tell(notices)
        if pause:
            self._pause(pause)
        return not stop

    def _commit(self, batch: list[Write], gaps: GapSnapshot) -> BaseException | None:
        with self._conn_lock:
            assert self._conn is not None  # _follow_name opened one or said why not
            return commit_batch(self._conn, self._wall, gaps.values(), batch)

    # ------------------------------------------------------------ the file

    def _follow_name(self) -> BaseException | None:
        """The path must name the open database; else a new one is opened there.

        Returns why no database could be opened (the batch is then retried like any
        failed write), None when there is one to write to. Two system calls when
        nothing moved.
        """
        if self._conn is not None:
            where = self._file.where()
            if where == HERE:
                return None
            self._let_go(where)
        try:
            conn = self._reconnect()
        except Exception as exc:
            return exc if isinstance(exc, sqlite3.Error | OSError) else StoreError(one_line(exc))
        with self._conn_lock:
            self._conn = conn
            self._file.hold()
        with self._cond:
            self._ledger.new_file()
        return None

    def _let_go(self, where: str) -> None:
        """The open database left its name: close it, count and say what went with it."""
        with self._conn_lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                # Everything into the file itself (a moved file then holds all of its rows,
                # and no WAL is left that could be replayed into another file), then close.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.close()
            self._file.let_go()  # only now: closing it drops SQLite's POSIX locks
        notices: Notices = []
        with self._cond:
            self._ledger.left_its_name(deleted=where == DELETED, reopening=True, notices=notices)
            self._cond.notify_all()
        self._listeners.tell(notices)

    def _last_look(self) -> Notices:
        """Closing: a database deleted since the last commit took its rows with it; said."""
        notices: Notices = []
        if self._conn is None or not self._file.held:
            return notices
        if self._file.where() == DELETED:
            with self._cond:
                self._ledger.left_its_name(deleted=True, reopening=False, notices=notices)
        return notices

    def _requeue(self, batch: list[Write]) -> None:
        self._pending.extendleft(reversed(batch))
        self._inflight = []
        self._enforce_backlog()

    def _succeeded(self, batch: list[Write], gaps: GapSnapshot, notices: Notices) -> None:
        self._inflight = []
        self._retries.succeeded(batch)
        self._ledger.committed(
            batch, gaps, seq=self._seq, settled=self._settled_seq(), notices=notices
        )

    def _failed(self, error: BaseException, notices: Notices) -> None:
        self._retries.failed()
        self._ledger.failed(error, notices)

    def _poisoned(self, batch: list[Write], error: BaseException, notices: Notices) -> None:
        """A row SQLite refuses: find it (one row at a time) and drop it, counted."""
        line = self._ledger.refused(error)
        if len(batch) > 1:
            self._requeue(batch)
            self._retries.isolate(batch)
            return
        self._inflight = []
        if not batch:
            # Only gap records were written and they failed: keep them, but do not spin.
            self._retries.failed()
        self._ledger.drop_refused(batch, line, notices)

    def _lose_everything(self) -> Notices:
        """Closing while writing fails: what is left is lost (the ledger says so once)."""
        left = list(self._inflight) + list(self._pending)
        self._inflight = []
        self._pending.clear()
        notices = self._ledger.lose(left)
        self._cond.notify_all()
        return notices

    def _unexpected(self, exc: Exception) -> bool:
        """A bug or surprise in the writer: count it, say it once, retry; False to stop."""
        log.debug("store writer error", exc_info=exc)
        notices: Notices = []
        with self._cond:
            self._requeue(self._inflight)
            if self._give_up:
                notices.extend(self._lose_everything())
            else:
                self._failed(exc, notices)
            pause = self._retries.wait()
            stop = self._give_up
        self._listeners.tell(notices)
        if stop:
            return False
        self._pause(pause)
        return True

    def _pause(self, seconds: float) -> None:
        if self._give_up:
            return
        if self._sleep is not None:
            self._sleep(seconds)
            return
        # Closing sets the event: a backoff never delays shutdown.
        self._wake.wait(seconds)
        self._wake.clear()


__all__ = ["StoreWriter"]
