"""The model's tools over the scene's lines and zones: ``watch_line`` and ``watch_zone``
(``tools/watchers.py``) over what is configured, and, while the status page can edit the
scene, over what is drawn there later."""

from __future__ import annotations

from collections.abc import Callable

from device.config import Config
from device.percept import Percept
from live.tool import Tool
from tools import FunctionTool
from tools.watchers import LINE_TOOL, ZONE_TOOL, SceneWatchers


def scene_editable(config: Config) -> bool:
    """Lines and zones can be drawn while the run goes on: the status page (its editor and
    ``PUT /api/scene``) is served."""
    return bool(config.outputs.http)


def scene_tools(config: Config, current: Callable[[], Percept | None]) -> list[Tool]:
    """``watch_line``/``watch_zone`` over the configured names; with the status page, also
    over lines and zones drawn there later (none configured and no page: no tool)."""
    editable = scene_editable(config)
    watchers = SceneWatchers(
        lines=list(config.scene.lines),
        zones=list(config.scene.zones),
        current=current,
        editable=editable,
        camera=config.camera_name,
    )
    tools: list[Tool] = []
    if config.scene.lines or editable:
        tools.append(
            FunctionTool(watchers.watch_line_tool(), name=LINE_TOOL, check=watchers.check_line)
        )
    if config.scene.zones or editable:
        tools.append(
            FunctionTool(watchers.watch_zone_tool(), name=ZONE_TOOL, check=watchers.check_zone)
        )
    return tools


__all__ = ["scene_editable", "scene_tools"]
