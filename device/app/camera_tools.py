"""The model's tools over the device's cameras, made once for a run: ``camera_tools``.

Each camera has its own ``CountPeople``, its own lines and zones to watch and its own
``look`` at its frames (with its privacy); the model calls one tool of each name, whose
``camera`` argument (``tools/cameras.py``: an enum of the names, where the device names
its cameras) says whose, and a streaming call's input is that camera's alone. One unnamed
camera: the tools are declared exactly as before cameras had names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from device.app.camera import Camera
from device.app.parts import look_tool, offers_look
from device.app.scene.tools import camera_scene_tools
from device.config import Config
from device.vision.perception import Perception
from live.tool import Tool
from tools.cameras import Cameras, per_camera
from tools.count_people import CountPeople, check_count_args, coalesce_counts
from tools.function_tool import FunctionTool
from tools.look import Look


@dataclass(frozen=True)
class CameraTools:
    """A run's tools, and the parts of them the rest of the device reads."""

    tools: list[Tool]
    cameras: Cameras
    counters: dict[str, CountPeople]  # each camera's count tools, by name
    look: Look  # every camera's looks: one bound, one budget, one count of outcomes


def camera_tools(config: Config, cameras: Sequence[Camera]) -> CameraTools:
    """``count_people``, ``count_people_now``, ``watch_line``/``watch_zone`` (with lines,
    zones or the page's editor) and ``look`` (unless no camera may be looked at)."""
    choice = Cameras(tuple(c.name for c in cameras), named=config.named_cameras)
    counters = {
        c.name: CountPeople(current=c.perception.current, why_unknown=_reason(c.perception))
        for c in cameras
    }
    first = cameras[0]
    look = look_tool(first.config, first.perception.current, _reason(first.perception))
    looks = {
        c.name: look.of_camera(
            c.perception.current,
            _reason(c.perception),
            privacy=c.config.device.privacy,
            geometry=look_tool(c.config, c.perception.current, _reason(c.perception)).geometry,
        )
        for c in cameras
    }
    tools: list[Tool] = [
        FunctionTool(
            per_camera("count_people", choice, counters),
            check=check_count_args,
            coalesce=coalesce_counts,
            input_filter=choice.input_filter,
        ),
        FunctionTool(
            per_camera(
                "count_people_now", choice, {n: c.count_people_now for n, c in counters.items()}
            )
        ),
        *camera_scene_tools(
            config, choice, {c.name: (c.config, c.perception.current) for c in cameras}
        ),
    ]
    if any(offers_look(c.config) for c in cameras):
        tools.append(
            FunctionTool(per_camera("look", choice, {n: v.look for n, v in looks.items()}))
        )
    return CameraTools(tools=tools, cameras=choice, counters=counters, look=look)


def _reason(perception: Perception) -> Callable[[], str]:
    return lambda: perception.unknown_reason


__all__ = ["CameraTools", "camera_tools"]
