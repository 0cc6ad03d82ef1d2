"""Where Lookout keeps what it can make again: ``$XDG_CACHE_HOME/lookout`` (``~/.cache``).

The detector's measured choice (``models/choice.py``) and OpenVINO's readable copies of the
model files (``models/openvino_backend.py``) live there; deleting the folder costs one
measurement and one copy, nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lookout"


__all__ = ["cache_dir"]
