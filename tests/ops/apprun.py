"""The real App with the operations wiring, run in the test's event loop."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from device.app.operations import Operations
from device.app.run import App
from device.app.wiring import build_app
from device.config import build
from device.sources import FrameSource
from tests.datafiles import data_file


@dataclass
class RunningApp:
    app: App
    ops: Operations
    events_path: Path
    exit_code: int | None = None

    @property
    def url(self) -> str:
        assert self.ops.server is not None
        return f"http://127.0.0.1:{self.ops.server.port}/"

    def events(self) -> list[dict[str, Any]]:
        lines = self.events_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]


@contextlib.asynccontextmanager
async def running_app(
    tmp_path: Path,
    environ: Mapping[str, str] | None = None,
    source: FrameSource | None = None,
    config_path: Path | None = None,
    sources: list[str] | None = None,
    **flags: Any,
) -> AsyncIterator[RunningApp]:
    """The sample video, the local model, a status server on a free port; stopped on exit.

    ``config_path``: a configuration file read under the flags (as ``--config``);
    ``sources``: ``--source`` given once each (``door=...``: named cameras)."""
    events = tmp_path / "events.jsonl"
    settings: dict[str, Any] = {
        "source": str(data_file("vtest.avi")),
        "model": "local",
        "pace": "realtime",
        "http": "127.0.0.1:0",
        "events": events,
        "device_id": "browser-test",
    }
    settings.update(flags)
    if sources is not None:
        settings["source"] = sources
    config = build(
        settings,
        config_path=config_path,
        environ=dict(environ or {}),
        system_config=tmp_path / "no-system-config.toml",
    )
    app = build_app(config, out=io.StringIO(), source=source)
    running = RunningApp(app, app.operations, events)

    done = anyio.Event()

    async def run() -> None:
        try:
            running.exit_code = await app.run()
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            yield running
        finally:
            app.request_stop()
            with anyio.fail_after(15):
                await done.wait()


__all__ = ["RunningApp", "running_app"]
