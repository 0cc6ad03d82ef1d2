"""Request-response tools on the camera: count now, an occupancy report, its pages.

* ``count_people_now()``: the device's count at the newest frame.
* ``start_occupancy_report(minutes)``: long-running; perceives the source for that
  long and summarises min/max/mean occupancy and the number of changes. Its
  progress goes to people, never to the model; its per-minute counts are kept
  in an ``OccupancyLog`` (``tools/occupancy_log.py``: memory, or SQLite beside the
  event log).
* ``fetch_counts(job_id, cursor)``: one page of a report's per-minute counts and
  the cursor of the next page.

Every number is the count perception made of a frame (``Percept.count``), the
same number ``lookout run`` reports for that frame: no second rule of who is
there.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

import anyio
from pydantic import Field

from device.vision.percept import Percept
from live.jobs.paging import paginate
from live.tool import Tool, ToolArgumentError, ToolContext
from tools.arguments import WholeRange
from tools.choices import with_choices, without
from tools.function_tool import FunctionTool
from tools.occupancy_log import MemoryOccupancyLog, OccupancyLog, SQLiteOccupancyLog

MAX_REPORT_MINUTES = 24 * 60


class PerceptProvider(Protocol):
    """Where the tools get what perception made of the source's frames."""

    name: str

    async def newest(self) -> Percept:
        """Perception of the newest frame."""
        ...

    def samples(self, duration_s: float) -> AsyncIterator[Percept]:
        """Perception of the frames of the next ``duration_s`` of media time, at its rate."""
        ...


@dataclass
class Bucket:
    """Occupancy in one period (a minute by default) of a report."""

    index: int
    start_s: float
    length_s: float
    samples: int = 0
    min: int | None = None
    max: int | None = None
    total: int = 0

    def add(self, count: int) -> None:
        self.samples += 1
        self.total += count
        self.min = count if self.min is None else min(self.min, count)
        self.max = count if self.max is None else max(self.max, count)

    def to_dict(self) -> dict[str, Any]:
        mean = round(self.total / self.samples, 2) if self.samples else None
        return {
            "period": self.index,
            "start_s": round(self.start_s, 1),
            "end_s": round(self.start_s + self.length_s, 1),
            "samples": self.samples,
            "min": self.min,
            "max": self.max,
            "mean": mean,
        }


@dataclass
class OccupancyTools:
    """The three tools over what perception makes of one source."""

    frames: PerceptProvider
    log: OccupancyLog = field(default_factory=MemoryOccupancyLog)
    sample_fps: float = 2.0  # how many percepts a second the provider gives (for the span)
    bucket_s: float = 60.0
    page_size: int = 10
    zones: tuple[str, ...] = ()  # the zones configured for the source (count_people_now)

    def __post_init__(self) -> None:
        if self.bucket_s <= 0 or self.page_size < 1:
            raise ValueError("bucket_s must be positive, page_size at least 1")
        # What the model is told of the source: a file's name, not where it lives on disk.
        name = self.frames.name
        self._source = Path(name).name if Path(name).is_file() else name

    def tools(self) -> list[Tool]:
        return [
            FunctionTool(
                with_choices(self.count_people_now, {"zone": self.zones})
                if self.zones
                else without(self.count_people_now, "zone")
            ),
            FunctionTool(self.start_occupancy_report, long_running=True),
            FunctionTool(self.fetch_counts),
        ]

    async def count_people_now(
        self,
        zone: Annotated[str, Field(description="one zone's name; empty: the whole view")] = "",
    ) -> dict[str, Any]:
        """Count the people in view right now (the camera's newest frame), or in one zone.

        Returns {"people": n, "in_last_frame": boxes the detector found, "frame": index,
        "t": seconds into the source, "source": name}, with "zone" when one was asked for
        ("people": those in it) and "zones": {name: people} where zones are configured.
        """
        if zone and zone not in self.zones:
            known = ", ".join(self.zones) or "none: add --zone NAME=..."
            raise ToolArgumentError(f"no zone {zone!r} is configured (zones: {known})")
        percept = await self.frames.newest()
        zones = {name: state.people for name, state in percept.zones.items()}
        answer: dict[str, Any] = {
            "people": zones.get(zone) if zone else percept.count,
            "in_last_frame": percept.raw,
            "frame": percept.frame.index,
            "t": round(percept.t_media, 2),
            "source": self._source,
        }
        if zone:
            answer["zone"] = zone
        if zones:
            answer["zones"] = zones
        return answer

    async def start_occupancy_report(
        self,
        minutes: Annotated[
            float,
            Field(
                gt=0,
                le=MAX_REPORT_MINUTES,
                description="how long to watch, in minutes (fractions allowed, at most "
                f"{MAX_REPORT_MINUTES}).",
            ),
            WholeRange(),
        ],
        context: ToolContext,
    ) -> dict[str, Any]:
        """Watch the camera for a number of minutes and summarise how many people were there.

        The summary has min, max and mean occupancy and how often the count changed;
        per-minute counts are read afterwards with fetch_counts(job_id, cursor).
        """
        job_id = context.job_id or context.call_id
        duration = minutes * 60.0
        buckets: dict[int, Bucket] = {}
        counts: list[int] = []
        changes = 0
        start_t: float | None = None
        last_t = 0.0
        async for percept in self.frames.samples(duration):
            count = percept.count
            if count is None:
                continue  # a frame the detector could not use: no number, not a zero
            if start_t is None:
                start_t = percept.t_media
            last_t = percept.t_media - start_t
            if counts and count != counts[-1]:
                changes += 1
            counts.append(count)
            index = int(last_t // self.bucket_s)
            for done in [i for i in buckets if i < index]:
                # A finished bucket is readable (fetch_counts) while the job goes on.
                await self._save(job_id, buckets.pop(done))
            bucket = buckets.setdefault(index, Bucket(index, index * self.bucket_s, self.bucket_s))
            bucket.add(count)
            context.progress(
                min(1.0, last_t / duration),
                f"{last_t:.0f}/{duration:.0f} s of {self._source}: {count} in view",
            )
        if counts:
            context.progress(1.0, f"{last_t:.0f} s of {self._source} watched")
        for bucket in buckets.values():
            await self._save(job_id, bucket)
        await anyio.to_thread.run_sync(self.log.finish, job_id)
        span = last_t + (1.0 / self.sample_fps if counts else 0.0)
        n_buckets = math.ceil(span / self.bucket_s) if counts else 0
        return {
            "minutes": minutes,
            "source": self._source,
            "watched_s": round(span, 1),
            "ended_early": span + 1e-6 < duration,
            "samples": len(counts),
            "min": min(counts) if counts else None,
            "max": max(counts) if counts else None,
            "mean": round(sum(counts) / len(counts), 2) if counts else None,
            "changes": changes,
            "periods": n_buckets,
            "period_s": self.bucket_s,
            "pages": math.ceil(n_buckets / self.page_size),
        }

    async def _save(self, job_id: str, bucket: Bucket) -> None:
        await anyio.to_thread.run_sync(self.log.put_bucket, job_id, bucket.to_dict())

    def fetch_counts(self, job_id: str, cursor: str = "") -> dict[str, Any]:
        """Read one page of an occupancy report's per-minute counts (one row per period).

        Start with an empty cursor; pass each answer's next_cursor to read on.
        next_cursor is null after the last page.

        Args:
            job_id: the job_id that start_occupancy_report answered with.
            cursor: where to continue; empty for the first page.
        """
        found = self.log.buckets(job_id)
        if found is None:
            known = self.log.job_ids()
            listed = ", ".join(known[-5:]) if known else "none yet"
            raise ToolArgumentError(
                f"fetch_counts: no report with job_id {job_id!r} (known: {listed})"
            )
        buckets, finished = found
        page = paginate(
            buckets, cursor, self.page_size, tool="fetch_counts", more_coming=not finished
        )
        return {
            "job_id": job_id,
            "counts": page.items,
            "next_cursor": page.next_cursor,
            "complete": finished and page.next_cursor is None,
        }


__all__ = [
    "Bucket",
    "MemoryOccupancyLog",
    "OccupancyLog",
    "OccupancyTools",
    "SQLiteOccupancyLog",
]
