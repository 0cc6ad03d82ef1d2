"""``--snapshots DIR``: one JPEG of the moment of each crossing, dwell and count change.

An event (``LineCrossed``, ``DwellPassed``, a ``CountChanged`` after the count stood still
for ``--snapshots-quiet`` s) is published by perception before the percept of its frame;
the event is kept pending and drawn on the percept whose frame it belongs to (the same
``t_media``), with the boxes and ids (``device/outputs/page/render.py``). Each picture gets its
file name at once; once on disk it is published as a ``snapshot`` event naming it and the
event it belongs to (a separate event: perception's events stay what perception knows).

Why only once written: the page, MQTT and the report link to the file the event names,
and a link to a file that is not there yet (or never will be: the disk is full) is a
broken picture. The worker hands each written picture back to the event loop
(``call_soon_threadsafe``), which publishes it; at the end of a run ``close`` publishes
what was written in its last second, and the bus closes this output before the logs
(``EventBus.subscribe(closes_first=True)``), so they still get it.

Drawing, JPEG encoding and the file writes run in one worker thread fed by a small bounded
queue: when it is full the picture is dropped and counted, never waited for. The folder is
kept under ``--snapshots-max-mb`` and ``--snapshots-days`` (oldest first; a running total,
so a write costs no listing). A failing write (disk full, the folder gone or unwritable) is
said once as an ``error`` event on the loop; the counting and the other outputs go on, and
writes are retried with each new picture. ``counts()`` (``/metrics``) says how many were
written, dropped, failed and pruned.

``--snapshots-privacy`` (``faces``: heads pixelated; ``boxes``: no camera pixels) is applied
to the copy drawn in the worker thread (``device/outputs/pictures/privacy.py``): only the
files change, never the frame the page and the other outputs show. (The page's list, MQTT's
images and the report show these files, so they show what the setting lets through.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from device.config import Config, ConfigError
from device.config.values import SnapshotPrivacy
from device.events import CountChanged, DwellPassed, LineCrossed, SceneChanged, SnapshotSaved
from device.files.whole_file import write_whole
from device.outputs.page.render import DisplayFrame, SceneGeometry, render_jpeg
from device.outputs.pictures.privacy import private_frame
from device.vision.percept import Perceived, Percept
from live.events import ErrorEvent, Event

log = logging.getLogger("lookout.snapshots")

QUEUE_SIZE = 8  # pictures waiting for the writer; past it they are dropped, counted
CLOSE_WAIT_S = 1.0  # at the end of a run: what is queued by then is written, or dropped
PENDING_MAX = 32  # events waiting for their frame's percept
OUTCOMES = ("written", "dropped", "failed", "pruned")  # what became of each picture
NAME = re.compile(r"^[0-9a-f]{12}-[0-9]+\.[0-9]{2}-[a-z]+-[A-Za-z0-9_.-]*\.jpg$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_part(text: str, limit: int = 40) -> str:
    """``text`` in characters every file system takes, bounded (a name is never a path)."""
    return _UNSAFE.sub("_", text).strip(".")[:limit]


RECENT_FRAMES = 8  # ~1.6 s at 5 detections a second: more than a crossing takes to count


def file_name(run_id: str, t_media: float, of: str, name: str, track: int | None) -> str:
    """``<run>-<t_media>-<type>-<name>[-<track>].jpg``: sorted by run and time."""
    who = safe_part(name) + (f"-{track}" if track is not None else "")
    return f"{safe_part(run_id, 12)}-{t_media:09.2f}-{of}-{who}.jpg"


@dataclass(frozen=True)
class _Pending:
    event: SnapshotSaved


@dataclass
class _Job:
    event: SnapshotSaved
    path: Path
    frame: DisplayFrame


class Snapshots:
    """The snapshot output: an ``EventSink`` and a percept callback (``on_percept``)."""

    def __init__(
        self,
        folder: Path,
        *,
        run_id: str,
        publish: Callable[[Event], None],
        geometry: SceneGeometry,
        max_bytes: int,
        max_age_s: float,
        quiet_s: float,
        quality: int = 80,
        privacy: SnapshotPrivacy = "none",
        now: Callable[[], float] = time.time,
        close_wait_s: float = CLOSE_WAIT_S,
    ) -> None:
        self.folder = folder
        self.run_id = run_id
        self._publish = publish
        self.geometry = geometry
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.quiet_s = quiet_s
        self.quality = quality
        self.privacy: SnapshotPrivacy = privacy
        self.close_wait_s = close_wait_s  # a run ends within 2 s (SIGTERM); a test may wait
        self._now = now
        self._pending: deque[_Pending] = deque(maxlen=PENDING_MAX)
        # The last frames looked at: a crossing is dated where the path met the line, a
        # few frames before it is counted, and pictured at the frame nearest that moment.
        self._recent: deque[Percept] = deque(maxlen=RECENT_FRAMES)
        self._last_change: float | None = None  # t_media of the count's last change
        self._jobs: queue.Queue[_Job | None] = queue.Queue(QUEUE_SIZE)
        self._seq = 0
        # Counters (read by tests and the end of a run).
        self.queued = 0
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self.pruned = 0
        # The worker's files, oldest first, and their total size.
        self._files: deque[tuple[float, Path, int]] = deque()
        self._total = 0
        self._lock = threading.Lock()
        self._error: str | None = None  # the worker's first failure, not yet said
        self._said = False
        # Written pictures the loop has not published yet (appended by the worker), and
        # the loop to wake for them (known once a picture was queued on it).
        self._done: deque[SnapshotSaved] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="lookout-snapshots", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ on the loop

    def write(self, event: Event) -> None:
        """Bus subscriber: an event worth a picture waits for its frame's percept."""
        self._drain()
        if isinstance(event, SceneChanged):
            self.geometry = SceneGeometry.edited(event)  # drawn from the next picture on
            return
        snapshot = self._snapshot_of(event)
        if snapshot is not None:
            self._pending.append(_Pending(snapshot))

    def _snapshot_of(self, event: Event) -> SnapshotSaved | None:
        if isinstance(event, LineCrossed):
            crossing = self._named(event.t_media, "crossing", event.line, event.track)
            return dataclasses.replace(crossing, direction=event.direction)
        if isinstance(event, DwellPassed):
            return self._named(event.t_media, "dwell", event.zone, event.track)
        if isinstance(event, CountChanged):
            if event.count is None:
                self._last_change = None  # counting starts afresh: no quiet spell yet
                return None
            last, self._last_change = self._last_change, event.t_media
            if event.previous is None or last is None or event.t_media is None:
                return None  # the first count of a run (or after an outage) is no change
            if event.t_media - last < self.quiet_s:
                return None
            return SnapshotSaved(
                file=file_name(self.run_id, event.t_media, "count", str(event.count), None),
                of="count",
                name="",
                t_media=event.t_media,
                frame=event.frame,
                count=event.count,
            )
        return None

    def _named(self, t_media: float, of: str, name: str, track: int) -> SnapshotSaved:
        return SnapshotSaved(
            file=file_name(self.run_id, t_media, of, name, track),
            of=of,
            name=name,
            track=track,
            t_media=t_media,
        )

    def on_percept(self, percept: Perceived) -> None:
        """Bus percept subscriber: the pending events of this frame get its picture."""
        self._drain()
        if not isinstance(percept, Percept) or percept.error is not None:
            return
        if not self._pending:
            self._recent.append(percept)
            return
        t = percept.t_media
        shown: dict[int, DisplayFrame] = {}
        while self._pending and self._pending[0].event.t_media <= t + 1e-6:
            event = self._pending.popleft().event
            source = percept
            if event.t_media < t - 1e-6:
                # Dated before this frame (a crossing, where the path met the line): the
                # recent frame nearest that moment; one counted long after (a person hidden
                # meanwhile) is pictured where it was counted. Other events are of their
                # own frame: one whose percept never came (unusable) gets no picture.
                nearest = self._nearest(event.t_media)
                if nearest is None and event.of != "crossing":
                    continue
                source = nearest or percept
            frame = shown.get(id(source))
            if frame is None:
                frame = shown[id(source)] = self._display(source)
            if event.frame is None:
                event = _with_frame(event, source.frame.index)
            self._enqueue(event, frame)
        self._recent.append(percept)

    def _nearest(self, t: float) -> Percept | None:
        """The recent frame nearest ``t`` (within a frame's spacing of it), if any."""
        if not self._recent:
            return None
        best = min(self._recent, key=lambda p: abs(p.t_media - t))
        spacing = (
            1.0
            if len(self._recent) < 2
            else max(b.t_media - a.t_media for a, b in itertools.pairwise(self._recent))
        )
        return best if abs(best.t_media - t) <= spacing + 1e-6 else None

    def _display(self, percept: Percept) -> DisplayFrame:
        self._seq += 1
        return DisplayFrame.of(percept, self._seq, self.geometry)

    def _enqueue(self, event: SnapshotSaved, frame: DisplayFrame) -> None:
        if self._loop is None:
            with contextlib.suppress(RuntimeError):  # no loop (a test driving it): close drains
                self._loop = asyncio.get_running_loop()
        try:
            self._jobs.put_nowait(_Job(event, self.folder / event.file, frame))
        except queue.Full:
            self.dropped += 1
            if self.dropped in (1, 10, 100, 1000):
                self._publish(
                    ErrorEvent(
                        message=f"snapshots: the writer is behind, {self.dropped} not written "
                        "(dropped)",
                        where="snapshots",
                    )
                )
            return
        self.queued += 1

    def _drain(self) -> None:
        """On the loop: publish the pictures written since, and say a failure once."""
        if self._closed:
            return  # a wake-up that came after the end: close() published everything
        while self._done:
            self._publish(self._done.popleft())
        self._say_problem()

    def counts(self) -> Mapping[str, int]:
        """What became of the pictures so far, by outcome (``OUTCOMES``)."""
        return {
            "written": self.written,
            "dropped": self.dropped,
            "failed": self.failed,
            "pruned": self.pruned,
        }

    def _say_problem(self) -> None:
        if self._said or self._error is None:
            return
        with self._lock:
            message = self._error
        self._said = True
        self._publish(
            ErrorEvent(
                message=f"snapshots: {message}; counting and the event logs go on (said once)",
                where="snapshots",
            )
        )

    def close(self) -> None:
        """Bus subscriber: write what is queued (for at most ``close_wait_s``), publish
        what was written, then stop."""
        with contextlib.suppress(queue.Full):
            self._jobs.put(None, timeout=self.close_wait_s)
        self._thread.join(self.close_wait_s)
        self._drain()
        self._closed = True

    # ------------------------------------------------------------ in the worker

    def _work(self) -> None:
        self._scan()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                # Here, off the loop: the pixels are hidden on a copy before drawing.
                data = render_jpeg(private_frame(job.frame, self.privacy), self.quality)
                write_whole(job.path, data)
            except Exception as exc:  # a file or drawing problem: never the writer's end
                self.failed += 1
                self._failed(exc)
                self._wake()
                continue
            self.written += 1
            self._files.append((self._now(), job.path, len(data)))
            self._total += len(data)
            self._prune()
            if self._files and self._files[-1][1] == job.path:  # not pruned at once (a tiny cap)
                self._done.append(job.event)
            self._wake()

    def _wake(self) -> None:
        """From the worker: have the loop publish what is done (or say what failed)."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: close() drains
                loop.call_soon_threadsafe(self._drain)

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            if self._error is None:
                reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                if getattr(exc, "errno", None) in (28, 122):  # ENOSPC, EDQUOT
                    reason = "the disk is full"
                self._error = f"cannot write in {self.folder}: {reason}"
        log.debug("snapshot not written", exc_info=exc)

    def _scan(self) -> None:
        """The folder's snapshots (of any run), oldest first: what the cap counts."""
        found: list[tuple[float, Path, int]] = []
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if not NAME.match(entry.name):
                        continue  # only Lookout's own pictures are ever deleted
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if entry.is_file(follow_symlinks=False):
                        found.append((info.st_mtime, Path(entry.path), info.st_size))
        except OSError as exc:
            self._failed(exc)
            return
        found.sort()
        self._files.extend(found)
        self._total = sum(size for _, _, size in found)
        self._prune()

    def _prune(self) -> None:
        oldest = self._now() - self.max_age_s
        while self._files and (self._total > self.max_bytes or self._files[0][0] < oldest):
            _, path, size = self._files.popleft()
            self._total -= size
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                self._failed(exc)
                continue
            self.pruned += 1


def _with_frame(event: SnapshotSaved, index: int) -> SnapshotSaved:
    return dataclasses.replace(event, frame=index)


def open_snapshots(
    config: Config, run_id: str, publish: Callable[[Event], None], say: Callable[[str], None]
) -> Snapshots | None:
    """The snapshot output ``config`` asks for (None: not asked, or ``--privacy``).

    A missing folder is created; a path that is not a folder (or cannot be made one) is a
    ConfigError (one line, exit 2) before anything runs.
    """
    folder = config.outputs.snapshots
    if folder is None:
        return None
    if config.device.privacy:
        say(f"privacy mode: no snapshots are written (--snapshots {folder} is ignored)")
        return None
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--snapshots {folder}: is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"--snapshots {folder}: cannot create it: {exc.strerror or exc}"
        ) from None
    return Snapshots(
        folder,
        run_id=run_id,
        publish=publish,
        geometry=SceneGeometry(
            lines={name: spec.points for name, spec in config.scene.lines.items()},
            zones={name: spec.points for name, spec in config.scene.zones.items()},
        ),
        max_bytes=int(config.outputs.snapshots_max_mb * 1_000_000),
        max_age_s=config.outputs.snapshots_days * 86_400,
        quiet_s=config.outputs.snapshots_quiet,
        quality=config.source.jpeg_quality,
        privacy=config.outputs.snapshots_privacy,
    )


__all__ = ["NAME", "OUTCOMES", "Snapshots", "file_name", "open_snapshots", "safe_part"]
