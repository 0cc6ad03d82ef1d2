"""Which way of running the detector the settings mean on this machine (``--backend``,
``--precision``; ``models/choice.py`` measures and chooses).

Made once a process, for the settings that decide it; the measurement is remembered across
runs in ``$XDG_CACHE_HOME/lookout/detector-choice.json`` (a cache: deleting it costs one
measurement, about a second here, tens of seconds on a Raspberry Pi 4).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # onnxruntime and OpenVINO load only when a detector is wanted
    from device.config.model import Config
    from models.choice import Choice


def remembered_file(environ: Mapping[str, str] | None = None) -> Path:
    from models.cache import cache_dir

    return cache_dir(environ) / "detector-choice.json"


@functools.cache
def detector_choice(
    backend: str, precision: str, own: Path | None, threads: int | None, *, fresh: bool = False
) -> Choice:
    """The variant to run (``fresh``: measured now, not remembered: ``lookout doctor``)."""
    from models.choice import choose
    from models.variants import candidates

    variants, left_out = candidates(backend, precision, own=own is not None)
    if not variants:  # openvino asked for by name and not installed
        raise ValueError(left_out[0] if left_out else f"--backend {backend}: not available")
    return choose(
        variants,
        own=own,
        threads=threads,
        left_out=left_out,
        remember=remembered_file(),
        fresh=fresh,
    )


def config_choice(config: Config, *, fresh: bool = False) -> Choice:
    p = config.perception
    return detector_choice(
        p.backend, p.precision, p.detector, p.detector_threads or None, fresh=fresh
    )


__all__ = ["config_choice", "detector_choice", "remembered_file"]
