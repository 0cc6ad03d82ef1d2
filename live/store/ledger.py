"""What a store wrote and dropped, and its problem episodes.

``StoreLedger`` keeps the counts behind ``StoreHealth``, the drops waiting to
be recorded in ``store_gaps`` and the current problem: when it began, what had
been written and dropped by then, and whether its start and its drops have
been said. It says each once, as notices for the writer to tell
(``live.store.health``) once its lock is let go. The ledger has no lock of its
own: the writer's lock guards it, so a count and the queue it describes
always change together.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from live.store.file import GapRow, Write, one_line
from live.store.health import (
    DATA_DROPPED,
    DATA_LOST,
    PROBLEM_ENDED,
    PROBLEM_STARTED,
    REOPENED,
    Notices,
    StoreHealth,
)

OVERFLOW = "backlog full"

GapKey = tuple[str, str]  # (kind, why)
GapSnapshot = Mapping[GapKey, GapRow]


@dataclass
class _Gap:
    since: float  # wall-clock time of the first drop
    count: int = 0
    by_label: Counter[str] = field(default_factory=Counter)


@dataclass
class _Episode:
    """One problem, from its first failure until the backlog has caught up."""

    started: float  # on the store's clock
    written_before: Counter[str]
    dropped_before: Counter[str]
    started_notice: bool = False
    dropped_notice: bool = False
    caught_up_at: int | None = None  # seq to reach once writing works again
    error: str | None = None  # the first error, why the backlog filled


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _describe(counts: Mapping[str, int]) -> str:
    parts = [_plural(n, kind) for kind, n in sorted(counts.items()) if n > 0]
    return ", ".join(parts) if parts else "nothing"


class StoreLedger:
    """The counts, gaps and problem episodes of one store; call with the writer's lock held."""

    def __init__(
        self,
        path: Path,
        max_backlog: int,
        *,
        clock: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        self.path = path
        self.max_backlog = max_backlog
        self._clock = clock
        self._wall = wall
        self.written: Counter[str] = Counter()
        # Per (kind, label), all along and when the open file was opened: what this store
        # wrote into the file open now, which a deletion takes with it.
        self.written_labels: Counter[tuple[str, str]] = Counter()
        self.file_base: Counter[tuple[str, str]] = Counter()
        self.waiting: Counter[str] = Counter()  # pending + in flight, per kind
        self.dropped: Counter[str] = Counter()
        self.gaps: dict[GapKey, _Gap] = {}
        self.retries = 0
        self.errors = 0
        self.last_error: str | None = None
        self.degraded = False
        self.episode: _Episode | None = None
        self._poison_seen: set[str] = set()

    # ------------------------------------------------------------ counting

    def queued(self, op: Write) -> None:
        self.waiting[op.kind] += 1

    def drop(self, op: Write, reason: str, *, queued: bool = True) -> None:
        """Count ``op`` as dropped, to be recorded in ``store_gaps``."""
        if queued:
            self.waiting[op.kind] -= 1
        self.dropped[op.kind] += 1
        gap = self.gaps.get((op.kind, reason))
        if gap is None:
            gap = self.gaps[(op.kind, reason)] = _Gap(since=self._wall())
        gap.count += 1
        gap.by_label[op.label] += 1

    def gap_snapshot(self) -> GapSnapshot:
        """The gap records to write with the next batch, as they stand now."""
        return {
            (kind, why): GapRow(
                gap.since, kind, gap.count, self._gap_reason(why), Counter(gap.by_label)
            )
            for (kind, why), gap in self.gaps.items()
        }

    def _gap_reason(self, why: str) -> str:
        if why != OVERFLOW:
            return why
        error = self.episode.error if self.episode is not None else None
        why = error or "writing could not keep up"
        return f"more than {self.max_backlog:,} writes waiting ({why})"

    def health(self, kind: str | None, *, closed: bool) -> StoreHealth:
        kinds = [kind] if kind is not None else None

        def total(counter: Counter[str]) -> int:
            if kinds is None:
                return sum(n for k, n in counter.items() if k != "schema")
            return sum(counter[k] for k in kinds)

        dropped = {k: n for k, n in self.dropped.items() if n and (kinds is None or k in kinds)}
        return StoreHealth(
            path=str(self.path),
            written=total(self.written),
            pending=total(self.waiting),
            dropped=sum(dropped.values()),
            dropped_by_kind=dropped,
            retries=self.retries,
            errors=self.errors,
            last_error=self.last_error,
            degraded=self.degraded,
            closed=closed,
            problem_since=self.episode.started if self.episode is not None else None,
        )

    # ------------------------------------------------------------ outcomes of a batch

    def committed(
        self,
        batch: Sequence[Write],
        gaps: GapSnapshot,
        *,
        seq: int,
        settled: int,
        notices: Notices,
    ) -> None:
        """A batch and the gap records with it are written; a problem may be over."""
        for op in batch:
            self.written[op.kind] += 1
            self.written_labels[op.kind, op.label] += 1
            self.waiting[op.kind] -= 1
        for key, row in gaps.items():
            gap = self.gaps.get(key)
            if gap is None:
                continue
            gap.count -= row.dropped
            gap.by_label.subtract(row.by_label)
            if gap.count <= 0:
                del self.gaps[key]
            else:
                gap.by_label = +gap.by_label
                gap.since = self._wall()
        self.degraded = False
        episode = self.episode
        if episode is None:
            return
        if episode.caught_up_at is None:
            episode.caught_up_at = seq
        if settled >= episode.caught_up_at and not self.gaps:
            self.episode = None
            caught_up = self.written - episode.written_before
            caught_up.pop("schema", None)
            dropped = self.dropped - episode.dropped_before
            text = f"event log: writing again; {_describe(caught_up)} caught up"
            if dropped:
                text += f", {_describe(dropped)} dropped (recorded in store_gaps)"
            notices.append((PROBLEM_ENDED, text))

    def _current_episode(self) -> _Episode:
        if self.episode is None:
            # Drops not yet in store_gaps belong to this problem, even if they came first.
            unrecorded: Counter[str] = Counter()
            for (kind, _), gap in self.gaps.items():
                unrecorded[kind] += gap.count
            self.episode = _Episode(self._clock(), Counter(self.written), self.dropped - unrecorded)
        return self.episode

    def failed(self, error: BaseException, notices: Notices) -> None:
        """Writing failed and will be retried: the start of a problem, or more of it."""
        self.retries += 1
        if not isinstance(error, sqlite3.Error | OSError):
            self.errors += 1  # not the disk or the database: a surprise, counted as such
        self.last_error = one_line(error)
        self.degraded = True
        episode = self._current_episode()
        episode.caught_up_at = None  # a failure while catching up: the same problem goes on
        episode.error = episode.error or self.last_error
        if not episode.started_notice:
            episode.started_notice = True
            waiting = {k: n for k, n in self.waiting.items() if k != "schema"}
            notices.append(
                (
                    PROBLEM_STARTED,
                    f"event log: {self.last_error} (writing {self.path.name}); keeping "
                    f"{_describe(waiting)} in memory and retrying",
                )
            )

    def refused(self, error: BaseException) -> str:
        """SQLite refused a row of the batch (which one is found one row at a time)."""
        self.errors += 1
        self.last_error = one_line(error)
        return self.last_error

    def drop_refused(self, batch: Sequence[Write], error: str, notices: Notices) -> None:
        """``batch`` (one row, or none but gap records) is what SQLite refuses: dropped."""
        for op in batch:
            self.drop(op, f"refused by SQLite: {error}")
        if error not in self._poison_seen:
            self._poison_seen.add(error)
            what = _describe(Counter(op.kind for op in batch)) if batch else "a gap record"
            notices.append((DATA_DROPPED, f"event log: could not write {what} ({error}); dropped"))

    def notice_overflow(self, seq: int, notices: Notices) -> None:
        """Once per problem, say that the backlog overflowed (the drops happen elsewhere)."""
        overflowed = {k[0]: g.count for k, g in self.gaps.items() if k[1] == OVERFLOW}
        if not overflowed:
            return
        episode = self._current_episode()
        if not self.degraded and episode.caught_up_at is None:
            episode.caught_up_at = seq  # falling behind, not failing: over once caught up
        if episode.dropped_notice:
            return
        episode.dropped_notice = True
        notices.append(
            (
                DATA_DROPPED,
                f"event log: more than {self.max_backlog:,} writes waiting for "
                f"{self.path.name}; dropping the oldest ({_describe(overflowed)} so far)",
            )
        )

    def new_file(self) -> None:
        """A new database is open at the path: what goes with a file counts from now."""
        self.file_base = Counter(self.written_labels)

    def left_its_name(self, *, deleted: bool, reopening: bool, notices: Notices) -> None:
        """The open database was renamed or deleted while open.

        A deleted one took what this store had written to it: those rows count as
        dropped (recorded in the next file's ``store_gaps``) and no longer as written.
        """
        name = self.path.name
        then = "; writing a new database at its name" if reopening else ""
        gone = self.written_labels - self.file_base
        gone = Counter({key: n for key, n in gone.items() if key[0] != "schema"})
        self.new_file()
        if not deleted:
            notices.append(
                (
                    REOPENED,
                    f"event log: {name} was renamed or moved while open (its events stay in "
                    f"it){then}",
                )
            )
            return
        if not gone:
            if reopening:
                notices.append(
                    (
                        REOPENED,
                        f"event log: {name} was deleted while open (nothing of this run was "
                        f"in it){then}",
                    )
                )
            return
        why = f"{name} was deleted while open"
        for (kind, label), n in gone.items():
            self.written[kind] -= n
            self.written_labels[kind, label] -= n
            self.dropped[kind] += n
            gap = self.gaps.get((kind, why))
            if gap is None:
                gap = self.gaps[(kind, why)] = _Gap(since=self._wall())
            gap.count += n
            gap.by_label[label] += n
        self.file_base = Counter(self.written_labels)
        self.last_error = why
        counts: Counter[str] = Counter()
        for (kind, _), n in gone.items():
            counts[kind] += n
        if not reopening:
            self.gaps.clear()  # closing: there is no file left to record them in
        notices.append(
            (
                DATA_DROPPED if reopening else DATA_LOST,
                f"event log: {why}: the {_describe(counts)} this run had written to it went "
                f"with it{then}",
            )
        )

    def lose(self, left: Iterable[Write]) -> Notices:
        """Closing while writing fails: count what is left as lost and say so once."""
        reason = f"closed before it could be written ({self.last_error or 'no answer yet'})"
        for op in left:
            self.drop(op, reason)
        unrecorded: Counter[str] = Counter()
        for (kind, _), gap in self.gaps.items():
            if kind != "schema":
                unrecorded[kind] += gap.count
        self.gaps.clear()  # nowhere left to record them; the stats keep the counts
        if not unrecorded:
            return []
        return [
            (
                DATA_LOST,
                f"event log: {_describe(unrecorded)} could not be written to {self.path.name} "
                f"before closing ({self.last_error or 'still waiting for the database'}); "
                "they are lost",
            )
        ]


__all__ = ["OVERFLOW", "GapKey", "GapSnapshot", "StoreLedger"]
