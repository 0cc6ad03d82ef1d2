"""The page's controls: start and stop a stream, push-to-talk, the lines and zones
(JSON in and out).

What a control does to the device is its own job; the server (``page/server.py``)
routes to it behind its guard (Host, token: ``page/request_guard.py``) and gives it its
JSON answer, scrubbed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from device.config.values import shown
from device.outputs.page.json_body import BodyError, json_object
from device.outputs.view import DeviceView, SceneControl

Reply = Callable[..., web.Response]  # (data, status=200): a scrubbed JSON answer


class Controls:
    def __init__(self, device: DeviceView, reply: Reply, body_timeout_s: float) -> None:
        self.device = device
        self._json = reply
        self.body_timeout_s = body_timeout_s

    async def _body(self, request: web.Request) -> dict[str, Any] | web.Response:
        body = await json_object(request, self.body_timeout_s)
        if isinstance(body, BodyError):
            response = self._json({"error": body.error}, body.status)
            if body.status == 408:
                response.force_close()  # the trickling peer's connection goes with it
            return response
        return body

    async def start_stream(self, request: web.Request) -> web.Response:
        """Start a streaming tool as a device call: same runtime path, nothing to the model."""
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        name, args = body.get("function_name"), body.get("args", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            error = "give function_name (string) and optional args (object)"
            return self._json({"error": error}, 400)
        session = self.device.session
        if session is None:
            return self._json({"error": "session not running"}, 503)
        startable = session.streaming_tools()
        if name not in startable:
            listed = ", ".join(startable) or "none"
            error = f"{name[:60]!r} is not a streaming tool (these are: {listed})"
            return self._json({"error": error}, 400)
        call = await session.call_tool(name, args)
        if not call.ok:
            return self._json({"error": call.response.get("error", "refused")}, 400)
        return self._json({"status": f"started {name} as a device call", "id": call.call_id})

    async def stop_stream(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        name, call_id = body.get("function_name"), body.get("call_id")
        if not all(v is None or isinstance(v, str) for v in (name, call_id)) or not (
            name or call_id
        ):
            return self._json({"error": "give function_name and/or call_id as strings"}, 400)
        session = self.device.session
        if session is None:
            return self._json({"error": "session not running"}, 503)
        result = await session.stop_streaming(name or None, call_id or None)
        return self._json(result)

    def _scene(self, request: web.Request) -> SceneControl | web.Response:
        """The scene of the camera the path names (``/api/scene/door``), or of the first
        camera (``/api/scene``)."""
        cameras = self.device.cameras
        name = request.match_info.get("camera")
        camera = next(iter(cameras.values())) if name is None else cameras.get(name)
        if camera is None:
            error = f"no camera named {shown(name)} (cameras: {', '.join(cameras)})"
            return self._json({"error": error}, 404)
        if camera.scene is None:
            return self._json({"error": "this device cannot edit its scene"}, 501)
        return camera.scene

    async def get_scene(self, request: web.Request) -> web.Response:
        """A camera's lines and zones as the page edits them, with the revision an edit
        names."""
        scene = self._scene(request)
        if isinstance(scene, web.Response):
            return scene
        return self._json(scene.current())

    async def put_scene(self, request: web.Request) -> web.Response:
        """A camera's whole scene as it should be: applied at its next frame, and saved."""
        scene = self._scene(request)
        if isinstance(scene, web.Response):
            return scene
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        status, answer = await scene.edit(body)
        return self._json(answer, status)

    async def talk(self, request: web.Request) -> web.Response:
        """Push-to-talk from the page: ``{"on": true}`` while the button is held."""
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        on = body.get("on")
        if not isinstance(on, bool):
            return self._json({"error": 'give "on": true or false'}, 400)
        said, ok = self.device.talk(on)
        return self._json({"status": said, "talking": on if ok else False}, 200 if ok else 409)


__all__ = ["Controls"]
