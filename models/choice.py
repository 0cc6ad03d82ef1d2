"""``--backend auto`` / ``--precision auto``: measure the candidates, keep the fastest that
holds the accuracy rule, and say which and why in one line.

Each candidate is loaded and timed on five check images (CPU time of the whole process per
detection, the median, after one warm-up: what a detection costs the device, whichever
threads the runtime uses). Then, fastest first, each is held to the accuracy rule
(``models/accuracy.py``) until one passes; the reference (onnxruntime fp32, or onnxruntime
running the user's own file) passes by definition, so a choice is always made and is never
slower than the reference. A candidate that fails to load is left out, saying why.

Measuring takes about a second here and tens of seconds on a Raspberry Pi 4, so the result
is remembered in a small JSON file (``remember``) under a key of everything it depends on:
the CPU and its flags, the runtimes' versions, the model files' hashes, the threads, the
candidates and the rule. A change to any of them measures again; ``lookout doctor`` always
measures afresh and writes what it found.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from models import accuracy
from models.accuracy import Verdict, check_set, judge
from models.backend import one_line
from models.cpu import read_cpu
from models.detections import Detections
from models.detector import PersonDetector, sha256_file
from models.variants import Variant, reference_for

TIMED_IMAGES = 5
FORMAT = 2  # of the remembered file
# Another runtime must save at least this share of the reference's CPU to be chosen: two
# runtimes within the timing's noise of each other would otherwise swap from machine to machine.
WORTH = 0.1


@dataclass(frozen=True)
class Measured:
    """One candidate on this machine."""

    variant: Variant
    ms: float | None = None  # CPU per detection; None: it could not be run
    arithmetic: str = ""  # what it computes in: fp32, bf16, fp16, int8
    verdict: Verdict | None = None  # None: the reference, or not needed (a faster one passed)
    error: str = ""
    reference: bool = False  # what the others are compared with

    @property
    def usable(self) -> bool:
        return self.ms is not None and (
            self.reference or (self.verdict is not None and self.verdict.passed)
        )

    def describe(self) -> str:
        """``openvino fp32 (bf16 arithmetic): 5.1 ms, scores within 0.003 ...: passes``."""
        if self.ms is None:
            return f"{self.variant.label}: cannot run ({self.error})"
        head = f"{self.variant.label} ({self.arithmetic} arithmetic): {self.ms:.1f} ms"
        if self.reference:
            return f"{head}; the reference"
        if self.verdict is None:
            return f"{head}; accuracy not checked (a faster one passed)"
        if self.verdict.passed:
            return f"{head}; {self.verdict.describe()}: passes"
        return f"{head}; {self.verdict.failure()}: fails the accuracy rule"


@dataclass(frozen=True)
class Choice:
    variant: Variant
    measured: tuple[Measured, ...]
    left_out: tuple[str, ...] = ()  # candidates that are not installed, and why
    measured_on: str = ""  # the date of a remembered measurement ("": just measured)

    @property
    def fallback(self) -> Variant | None:
        """What to run if the chosen variant fails to load after all: the reference it was
        compared with (None: it is the reference, or was set, not chosen)."""
        reference = next((m.variant for m in self.measured if m.reference), None)
        return reference if reference is not None and reference != self.variant else None

    @property
    def runs(self) -> bool:
        """The chosen variant ran here (or was set, not measured)."""
        return len(self.measured) < 2 or self.ms is not None

    @property
    def ms(self) -> float | None:
        return next((m.ms for m in self.measured if m.variant == self.variant), None)

    def line(self) -> str:
        """What the run says first: the choice and why, in one line."""
        chosen = next((m for m in self.measured if m.variant == self.variant), None)
        if chosen is None or len(self.measured) < 2:
            return f"detector: {self.variant.label} (as set)"
        if chosen.ms is None:
            return f"detector: {self.variant.label}: none of the candidates runs here"
        head = (
            f"detector: {chosen.variant.label} ({chosen.arithmetic} arithmetic), "
            f"{chosen.ms:.1f} ms a detection here"
        )
        others = []
        for m in self.measured:
            if m is chosen:
                continue
            if m.ms is None:
                others.append(f"{m.variant.label} cannot run")
            else:
                note = " (the reference)" if m.reference else ""
                if m.verdict is not None and not m.verdict.passed:
                    note = " (fails the accuracy rule)"
                elif m.usable and chosen.reference and m.ms < chosen.ms:
                    note = f" (less than {WORTH:.0%} faster)"
                others.append(f"{m.variant.label}{note} {m.ms:.1f}")
        why = f"; {', '.join(others)}" if others else ""
        if chosen.verdict is not None:
            why += f"; it holds the accuracy rule: {chosen.verdict.describe()}"
        if self.left_out:
            why += f"; {'; '.join(self.left_out)}"
        when = (
            f" (measured {self.measured_on}; lookout doctor measures again)"
            if self.measured_on
            else ""
        )
        return head + why + when


def _arithmetic(detector: PersonDetector, variant: Variant) -> str:
    computes = getattr(detector.backend, "arithmetic", "fp32")
    return "int8" if variant.precision == "int8" else computes


def _timed(detector: PersonDetector, images: Sequence[np.ndarray]) -> float:
    detector.detect(images[0])  # the first run allocates; it is not what a detection costs
    runs = []
    for image in images:
        t0 = time.process_time()
        detector.detect(image)
        runs.append((time.process_time() - t0) * 1000)
    return statistics.median(runs)


Reference = list[list[tuple[accuracy.Box, float]]]


def measure(
    variants: Sequence[Variant],
    *,
    own: Path | None = None,
    threads: int | None = 1,
    on_progress: Callable[[str], None] | None = None,
    every: bool = False,
) -> list[Measured]:
    """Time every variant, then hold them to the rule, fastest first, until one passes
    (``every``: all of them, for the table ``lookout doctor`` shows)."""
    images = [item.image for item in check_set()]
    base = reference_for(variants)
    loaded: dict[Variant, PersonDetector] = {}
    rows: dict[Variant, Measured] = {}
    # The reference first: a file it cannot load is no model, and no other runtime is tried.
    for variant in sorted(variants, key=lambda v: v != base):
        if base in rows and base not in loaded:
            rows[variant] = Measured(variant, error=f"not tried: {base.label} cannot load it")
            continue
        try:
            detector = variant.detector(own, threshold=accuracy.REPORT_SCORE, threads=threads)
            ms = _timed(detector, images[:TIMED_IMAGES])
        except Exception as exc:  # a backend that cannot run is one candidate fewer
            rows[variant] = Measured(variant, error=one_line(exc))
            continue
        loaded[variant] = detector
        rows[variant] = Measured(
            variant, ms, _arithmetic(detector, variant), reference=variant == base
        )
    reference: Reference | None = None
    if base.precision != "fp32" and base in loaded:  # only fp32's is stored
        reference = [_boxes(loaded[base].detect(image)) for image in images]
    for variant in sorted(loaded, key=lambda v: rows[v].ms or 0.0):
        if variant == base:
            if every:
                continue
            break  # it passes by definition, and every one left is slower
        if base.precision != "fp32" and reference is None:
            row = rows[variant]
            rows[variant] = replace(row, ms=None, error=f"{base.label} cannot run to compare with")
            continue
        if on_progress:
            on_progress(f"checking {variant.label}'s accuracy on {len(images)} images")
        verdict = judge(loaded[variant].detect, reference)
        rows[variant] = replace(rows[variant], verdict=verdict)
        if verdict.passed and not every:
            break
    return [rows[v] for v in variants]


def _boxes(dets: Detections) -> list[tuple[accuracy.Box, float]]:
    return [
        ((b[0], b[1], b[2], b[3]), s)
        for b, s in zip(dets.boxes.tolist(), dets.scores.tolist(), strict=True)
    ]


def pick(measured: Sequence[Measured]) -> Measured | None:
    """The fastest usable candidate; the reference unless another saves ``WORTH`` of it."""
    usable = [m for m in measured if m.usable]
    if not usable:
        return None
    best = min(usable, key=lambda m: m.ms or 0.0)
    reference = next((m for m in usable if m.reference), None)
    if reference is not None and (best.ms or 0.0) > (1 - WORTH) * (reference.ms or 0.0):
        return reference
    return best


@cache
def _file_hash(path: Path) -> str:
    return sha256_file(path)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def remember_key(variants: Sequence[Variant], own: Path | None, threads: int | None) -> str:
    cpu = read_cpu()
    parts = {
        "cpu": cpu.describe(),
        "onnxruntime": _version("onnxruntime"),
        "openvino": _version("openvino"),
        "models": sorted({_file_hash(v.model(own)) for v in variants}),
        "check": hashlib.sha256(accuracy.REFERENCE_FILE.read_bytes()).hexdigest(),
        "rule": [accuracy.SCORE_SHIFT, accuracy.MOST_IMAGES_CHANGED, accuracy.MOST_CHANGE],
        "threads": threads,
        "candidates": [[v.label, v.exact] for v in variants],
        "format": FORMAT,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _load(path: Path, key: str) -> tuple[list[Measured], str] | None:
    try:
        data = json.loads(path.read_text())
        if data.get("key") != key:
            return None
        rows = []
        for row in data["rows"]:
            verdict = Verdict(**row["verdict"]) if row.get("verdict") else None
            variant = Variant(row["backend"], row["precision"], bool(row.get("exact")))
            rows.append(
                Measured(
                    variant, row["ms"], row["arithmetic"], verdict, row["error"], row["reference"]
                )
            )
        return rows, str(data["measured_on"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, unreadable or of another version: measured again


def _store(path: Path, key: str, rows: Sequence[Measured]) -> None:
    data: dict[str, Any] = {
        "key": key,
        "measured_on": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "rows": [
            {
                "backend": m.variant.backend,
                "precision": m.variant.precision,
                "exact": m.variant.exact,
                "ms": m.ms,
                "arithmetic": m.arithmetic,
                "verdict": asdict(m.verdict) if m.verdict else None,
                "error": m.error,
                "reference": m.reference,
            }
            for m in rows
        ],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(json.dumps(data, indent=1) + "\n")
        part.replace(path)
    except OSError:
        pass  # a read-only home: measured again next time, nothing else is lost


def choose(
    variants: Sequence[Variant],
    *,
    own: Path | None = None,
    threads: int | None = 1,
    left_out: Sequence[str] = (),
    remember: Path | None = None,
    fresh: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> Choice:
    """The fastest of ``variants`` that holds the accuracy rule (measured, or remembered;
    ``fresh``: measured now, every one of them held to the rule)."""
    if len(variants) == 1:
        return Choice(variants[0], (Measured(variants[0]),), tuple(left_out))
    key = remember_key(variants, own, threads) if remember else ""
    known = None if (fresh or remember is None) else _load(remember, key)
    if known is not None:
        rows, measured_on = known
    else:
        rows = measure(variants, own=own, threads=threads, on_progress=on_progress, every=fresh)
        measured_on = ""
        if remember is not None:
            _store(remember, key, rows)
    best = pick(rows)
    if best is None:  # not even the reference runs: the run's own load says why
        return Choice(variants[0], tuple(rows), tuple(left_out), measured_on)
    return Choice(best.variant, tuple(rows), tuple(left_out), measured_on)


__all__ = ["Choice", "Measured", "choose", "measure", "pick", "remember_key"]
