"""The model's tools over the scene's lines and zones: ``watch_line`` and ``watch_zone``
(``tools/watchers.py``) over what is configured, and, while the status page can edit the
scene, over what is drawn there later.

Lines and zones are a camera's own: where the device names its cameras, a watch takes
``camera`` (``tools/cameras.py``) and the name is checked against that camera's scene,
so a line of one camera asked of another is refused, naming each camera's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from device.config import Config
from device.vision.percept import CurrentPercept, Percept
from live.tool import Tool, ToolArgumentError
from tools.cameras import CAMERA, Cameras, per_camera
from tools.function_tool import FunctionTool
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


def camera_scene_tools(
    config: Config, cameras: Cameras, scenes: Mapping[str, tuple[Config, CurrentPercept]]
) -> list[Tool]:
    """``watch_line``/``watch_zone`` over each camera's lines and zones (``scenes``: each
    camera's settings and newest percept); one unnamed camera: ``scene_tools``."""
    if not cameras.declared:
        (only,) = scenes.values()
        return scene_tools(only[0], only[1])
    editable = scene_editable(config)
    watchers = {
        name: SceneWatchers(
            lines=list(view.scene.lines),
            zones=list(view.scene.zones),
            current=current,
            editable=editable,
        )
        for name, (view, current) in scenes.items()
    }
    tools: list[Tool] = []
    for kind, tool_name in (("line", LINE_TOOL), ("zone", ZONE_TOOL)):
        configured = {name: w.lines if kind == "line" else w.zones for name, w in watchers.items()}
        if not editable and not any(configured.values()):
            continue
        of_camera = {
            name: w.watch_line_tool() if kind == "line" else w.watch_zone_tool()
            for name, w in watchers.items()
        }
        name_type = _name_type(kind, configured, editable)
        tools.append(
            FunctionTool(
                per_camera(tool_name, cameras, of_camera, annotations={"name": name_type}),
                check=_checker(kind, tool_name, cameras, watchers),
                input_filter=cameras.input_filter,
            )
        )
    return tools


def _name_type(kind: str, configured: Mapping[str, Any], editable: bool) -> Any:
    """A line's (or zone's) name as declared: of any camera's (each checks its own when
    called), with each camera's in the description."""
    each = "; ".join(
        f"{camera}: {', '.join(names) or 'none'}" for camera, names in configured.items()
    )
    if editable:
        return Annotated[
            str,
            Field(
                description=f"the {kind}, by name, of the camera given (at the start: {each}; "
                "one drawn later on the device's status page is valid too)"
            ),
        ]
    names = list(dict.fromkeys(n for camera_names in configured.values() for n in camera_names))
    choices: Any = Literal[tuple(names)]
    return Annotated[
        choices,
        Field(description=f"the {kind}, by its configured name, of the camera given ({each})"),
    ]


def _checker(
    kind: str, tool: str, cameras: Cameras, watchers: Mapping[str, SceneWatchers]
) -> Callable[[dict[str, Any]], None]:
    def check(args: dict[str, Any]) -> None:
        camera = cameras.resolve(args.get(CAMERA), tool)
        name = str(args.get("name", ""))
        names = watchers[camera].names_now(kind)
        if name in names:
            return
        theirs = [
            other for other, w in watchers.items() if other != camera and name in w.names_now(kind)
        ]
        mine = f"its {kind}s: {', '.join(names)}" if names else f"it has no {kind}s"
        if watchers[camera].editable and not names:
            mine += " yet: one can be drawn on the device's status page"
        elsewhere = f"; {name!r} is {' and '.join(theirs)}'s" if theirs else ""
        raise ToolArgumentError(
            f"{tool}: camera {camera} has no {kind} named {name!r} ({mine}{elsewhere})"
        )

    return check


__all__ = ["camera_scene_tools", "scene_editable", "scene_tools"]
