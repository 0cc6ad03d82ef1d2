"""What a run says about itself first: the ``run`` event and the configuration without secrets."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from device.config import Config
from device.events import RunStarted
from device.sources import FrameSource
from live.util.redact import safe_url, strip_credentials

URL_SETTINGS = frozenset({"source", "mqtt"})


def run_started(
    run_id: str,
    source: FrameSource | None,
    config: Config,
    described: dict[str, Any],
    command: str = "run",
    wall: float | None = None,
    cameras: Mapping[str, FrameSource] | None = None,
) -> RunStarted:
    """The ``run`` event; ``wall``: the wall-clock time now (the system's by default);
    ``source`` None: none was opened (a question about the log), said as ``""``;
    ``cameras``: every camera's source by name (``source`` is the first's)."""
    wall = time.time() if wall is None else wall
    return RunStarted(
        run_id=run_id,
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(wall)),
        started_wall=round(wall, 3),
        source="" if source is None else safe_url(source.name),
        live=source is not None and source.is_camera,
        model=config.model_name(),
        command=command,
        config=described,
        cameras={
            name: {"source": safe_url(camera.name), "live": camera.is_camera}
            for name, camera in (cameras or {}).items()
        },
    )


def describe_config(config: Config) -> dict[str, Any]:
    """The effective configuration without secrets (for logs and the status page)."""
    data = config.dump_flat()  # by setting name, as the run event has always carried it
    if data.get("http_token"):
        data["http_token"] = "***"
    # Camera and broker URLs carry passwords more often than not, in the user info or the
    # query: shown as everywhere else (safe_url); a URL inside any other text as well.
    data = {
        k: (safe_url(v) if k in URL_SETTINGS else strip_credentials(v)) if isinstance(v, str) else v
        for k, v in data.items()
    }
    for camera in data.get("cameras", {}).values():
        if isinstance(camera.get("source"), str):
            camera["source"] = safe_url(camera["source"])
    data["model"] = config.model_name()
    return data


__all__ = ["URL_SETTINGS", "describe_config", "run_started"]
