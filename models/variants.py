"""The ways this machine can run the person detector: a backend and the shipped precision.

``--backend auto|onnxruntime|openvino`` and ``--precision auto|fp32|int8`` name a set of
candidates; ``models/choice.py`` measures them and keeps the fastest that holds the
accuracy rule. A user's own model file (``--detector``) has one precision, its own, so only
the backend varies for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from models.backend import InferenceBackend, OnnxRuntimeBackend
from models.detector import PersonDetector, shipped_model
from models.openvino_backend import OpenVinoBackend, openvino_available

BackendName = Literal["onnxruntime", "openvino"]
BACKENDS: tuple[BackendName, ...] = ("onnxruntime", "openvino")
PRECISIONS = ("fp32", "int8")
OWN = "own"  # the precision of a user's own file: whatever it holds


@dataclass(frozen=True)
class Variant:
    backend: BackendName
    precision: str  # fp32 | int8 (a shipped file) | own (--detector)
    # fp32 asked for by name: computed in fp32 (OpenVINO's own default would be bf16 or
    # fp16 where the CPU has it: what auto may choose, held to the rule).
    exact: bool = False

    @property
    def label(self) -> str:
        what = "your model" if self.precision == OWN else self.precision
        return f"{self.backend} {what}"

    def model(self, own: Path | None = None) -> Path:
        if self.precision == OWN:
            if own is None:
                raise ValueError("a variant of the user's own model needs its path")
            return own
        return shipped_model(self.precision)

    def backend_factory(self, threads: int | None) -> Callable[[Path], InferenceBackend]:
        if self.backend == "openvino":
            return functools.partial(OpenVinoBackend, threads=threads, exact=self.exact)
        return functools.partial(OnnxRuntimeBackend, threads=threads)

    def detector(
        self, own: Path | None = None, *, threshold: float = 0.45, threads: int | None = 1
    ) -> PersonDetector:
        return PersonDetector(
            self.model(own),
            threshold=threshold,
            threads=threads,
            backend=self.backend_factory(threads),
        )


def reference_for(variants: Sequence[Variant]) -> Variant:
    """What the accuracy rule compares ``variants`` with: onnxruntime running the one
    precision they share (the shipped int8 when int8 is asked for, the user's own file),
    else the shipped fp32, what Lookout has always counted with."""
    shared = {v.precision for v in variants}
    exact = any(v.exact for v in variants)
    return Variant("onnxruntime", shared.pop() if len(shared) == 1 else "fp32", exact)


def candidates(backend: str, precision: str, *, own: bool) -> tuple[list[Variant], list[str]]:
    """The variants a setting names that can run here, and why any it names cannot."""
    backends = list(BACKENDS) if backend == "auto" else [backend]
    precisions = [OWN] if own else (list(PRECISIONS) if precision == "auto" else [precision])
    left_out: list[str] = []
    if "openvino" in backends:
        why_not = openvino_available()
        if why_not:
            backends.remove("openvino")
            left_out.append(why_not)
    exact = precision == "fp32" and not own
    found = [Variant(b, p, exact) for b in backends for p in precisions]  # type: ignore[arg-type]
    return found, left_out


__all__ = [
    "BACKENDS", "OWN", "PRECISIONS", "BackendName", "Variant", "candidates", "reference_for",
]  # fmt: skip
