"""The status server: a live page, snapshot, MJPEG, health and Prometheus metrics.

An aiohttp server that runs as an App service inside the app's event loop. Its
socket is bound before the app starts (``listen``), so a taken port or a bad
address is reported as one line before anything runs. Live updates go out as
Server-Sent Events (state, about 4 per second at most) and MJPEG (the annotated
frame); nothing polls for images.

Security: the server never serves configuration, and every JSON body it sends
is scrubbed of the configured secrets. Every route is behind one guard (the Host
check, the token or its cookie, the security headers: ``page/request_guard.py``).
State changes need a JSON body, which a cross-site form cannot send without a
CORS preflight that we never answer (``page/json_body.py``).

Readers can never cost the count: requests are answered in turn at a bounded
rate and connections accepted at one (``page/pacing.py``, ``page/connection_guard.py``),
and the bodies every reader asks for are made once per change of the device,
not per request (``page/bodies.py``). Here: binding, the routes and the limits on
viewers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import anyio
from aiohttp import web
from anyio.abc import TaskStatus
from prometheus_client import CONTENT_TYPE_LATEST

from device.outputs.camera_state import CameraState
from device.outputs.page.bodies import SharedBody
from device.outputs.page.connection_guard import ConnectionGuard, GuardStats, cap_for_limit, serve
from device.outputs.page.controls import Controls
from device.outputs.page.files import PAGE_CSP, page_with_state, static_files
from device.outputs.page.host_check import HostPolicy
from device.outputs.page.http_address import HttpAddress, bind
from device.outputs.page.pacing import RequestPacing
from device.outputs.page.push import push_frames, push_states
from device.outputs.page.rate import Pacer
from device.outputs.page.request_guard import RequestGuard
from device.outputs.page.request_log import requests_log
from device.outputs.pictures.files import read_picture, valid_name
from device.outputs.pictures.latest import ROUTE as PICTURES_ROUTE
from device.outputs.telemetry import Telemetry
from live.util.redact import redact

CLEANUP_S = 0.3  # at the end of a run, at most this long for requests in flight
log = logging.getLogger("lookout.status")
MJPEG_BOUNDARY = "lookout-frame-7c1d2e9a"


class StatusServer:
    """An App service; ``listen()`` first (the wiring does), then the app runs it."""

    def __init__(
        self,
        telemetry: Telemetry,
        address: HttpAddress,
        *,
        token: str | None = None,
        secrets: tuple[str, ...] = (),
        announce: Callable[[str], None] | None = None,
        sse_min_interval_s: float = 0.25,
        sse_tick_s: float = 1.0,
        mjpeg_max_fps: float = 10.0,
        mjpeg_idle_s: float = 15.0,
        hosts: tuple[str, ...] = (),
        max_connections: int = 200,
        max_viewers: int = 50,
        head_timeout_s: float = 5.0,
        body_timeout_s: float = 5.0,
        keepalive_s: float = 15.0,
        connections: GuardStats | None = None,
        pacing: RequestPacing | None = None,
        accept_rate_per_s: float = 500.0,
        body_max_age_s: float = 0.25,
    ) -> None:
        """``connections``: where the server counts its connections (the metrics read
        them from the same object; made here when not given). ``pacing``: how fast
        requests are answered (``page/pacing.py``'s defaults when not given);
        ``accept_rate_per_s``: how fast connections are accepted (the burst is the cap);
        ``body_max_age_s``: how old a shared body may be when nothing changed."""
        self.telemetry = telemetry
        self.address = address
        self.max_connections = max_connections
        self.max_viewers = max_viewers
        self.head_timeout_s = head_timeout_s
        self.body_timeout_s = body_timeout_s
        self.keepalive_s = keepalive_s
        self.mjpeg_idle_s = mjpeg_idle_s
        self.connections = connections if connections is not None else GuardStats()
        self.pacing = pacing if pacing is not None else RequestPacing(stats=self.connections.paced)
        self.accept_rate_per_s = accept_rate_per_s
        self._guard: ConnectionGuard | None = None
        self.viewers_refused = 0
        self.token = token or None
        self.request_guard = RequestGuard(HostPolicy.for_bind(address.loopback, hosts), token)
        self.secrets = tuple(s for s in (*secrets, token) if s)
        self.announce = announce
        self.sse_min_interval_s = sse_min_interval_s
        self.sse_tick_s = sse_tick_s
        self.mjpeg_interval_s = 1.0 / mjpeg_max_fps
        self.port = address.port
        self.note = ""  # said with the address (a default port that was in use)
        self._sock: socket.socket | None = None
        self._static = static_files()
        self._streams: set[asyncio.Task[Any]] = set()
        self._jpeg_limiter: anyio.CapacityLimiter | None = None
        self._file_limiter: anyio.CapacityLimiter | None = None
        version = self._state_version
        self.state_body = SharedBody(self._make_state, version, max_age_s=body_max_age_s)
        self.metrics_body = SharedBody(self._make_metrics, version, max_age_s=body_max_age_s)

    # ------------------------------------------------------------- lifecycle

    def listen(self, *, fallback_ports: int = 0, given_as: str = "") -> None:
        """Bind the socket now, so that a taken port fails before the app starts (the
        arguments: ``http_address.bind``)."""
        if self._sock is not None:
            return
        sock = bind(self.address, fallback_ports=fallback_ports, given_as=given_as)
        self._sock = sock
        self.port = sock.getsockname()[1]
        if self.port != self.address.port and self.address.port:
            self.note = f" ({self.address} was in use)"
        if not self.address.loopback:
            bound = HttpAddress(self.address.host, self.port)  # port 0: the one it was given
            if self.token:
                log.warning(
                    "status server listens on %s, beyond this machine; it requires the "
                    "token, but traffic is not encrypted (put it behind a TLS proxy)",
                    bound,
                )
            else:
                log.warning(
                    "status server listens on %s, beyond this machine, WITHOUT a token: "
                    "anyone on the network can see the camera and stop streams "
                    "(set --http-token, or bind to 127.0.0.1)",
                    bound,
                )

    def close(self) -> None:
        """Release the socket of a server that will not run after all."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @property
    def url(self) -> str:
        return self.address.url(self.port)

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        self.listen()
        assert self._sock is not None
        self._jpeg_limiter = anyio.CapacityLimiter(1)
        # Pictures are read in threads of their own: a burst of thumbnails never holds
        # up the default pool (the detector's inference runs there).
        self._file_limiter = anyio.CapacityLimiter(2)
        web_app = self.make_app()
        runner = web.AppRunner(
            web_app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=1.0,
            keepalive_timeout=self.keepalive_s,
            # After an answer to a request whose body was not read (too slow, too big),
            # aiohttp reads on for up to 10 s before closing: a trickling peer keeps its
            # connection that long. A second is enough for an honest client.
            lingering_time=1.0,
            logger=requests_log,
        )
        await runner.setup()
        assert runner.server is not None
        guard = ConnectionGuard(
            runner.server,
            max_connections=cap_for_limit(self.max_connections),
            head_timeout_s=self.head_timeout_s,
            stats=self.connections,
        )
        self._guard = guard
        accepts = Pacer(self.accept_rate_per_s, max(1, guard.max_connections))
        try:
            async with anyio.create_task_group() as connections:
                connections.start_soon(serve, self._sock, guard, accepts)
                if self.announce is not None:
                    self.announce(f"status page: {self.url}{self.note}")
                task_status.started()
                try:
                    await anyio.sleep_forever()
                finally:
                    connections.cancel_scope.cancel()
        finally:
            guard.closing = True
            # Long-lived responses (SSE, MJPEG) would hold shutdown for the whole grace
            # period; end them first so the app exits promptly.
            for task in list(self._streams):
                task.cancel()
            # Bounded well inside the 2 s a signal has to end the run (device/app/run.py):
            # a request still being answered is cut rather than waited for.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_S):
                await runner.cleanup()
            self.close()

    def make_app(self) -> web.Application:
        web_app = web.Application(
            middlewares=[self.pacing.pace, self.request_guard.check], client_max_size=64 * 1024
        )
        web_app.on_response_prepare.append(self.request_guard.headers)
        web_app.on_response_prepare.append(self._rotate)
        web_app.router.add_get("/", self._index)
        web_app.router.add_get("/static/{name}", self._static_file)
        web_app.router.add_get("/healthz", self._healthz)
        web_app.router.add_get("/metrics", self._metrics)
        web_app.router.add_get("/snapshot.jpg", self._snapshot)
        web_app.router.add_get("/stream.mjpg", self._mjpeg)
        web_app.router.add_get(f"/{PICTURES_ROUTE}/{{name}}", self._picture)
        web_app.router.add_get("/events", self._events)
        web_app.router.add_get("/api/state", self._api_state)
        controls = Controls(self.telemetry.device, self._json, self.body_timeout_s)
        web_app.router.add_post("/api/streams/stop", controls.stop_stream)
        web_app.router.add_post("/api/streams/start", controls.start_stream)
        web_app.router.add_post("/api/talk", controls.talk)
        web_app.router.add_get("/api/scene", controls.get_scene)
        web_app.router.add_put("/api/scene", controls.put_scene)
        web_app.router.add_get("/api/scene/{camera}", controls.get_scene)
        web_app.router.add_put("/api/scene/{camera}", controls.put_scene)
        return web_app

    # -------------------------------------------------------------- helpers

    def _json(self, data: Any, status: int = 200) -> web.Response:
        return web.Response(
            status=status, text=self._scrub(json.dumps(data)), content_type="application/json"
        )

    def _scrub(self, text: str) -> str:
        return redact(text, self.secrets) if self.secrets else text

    def _state_version(self) -> int:
        return self.telemetry.state_changes.version

    def _make_state(self) -> bytes:
        return self._scrub(json.dumps(self.telemetry.state(), separators=(",", ":"))).encode()

    def _make_metrics(self) -> bytes:
        return self._scrub(self.telemetry.metrics_text().decode()).encode()

    def _state_json(self) -> str:
        return self.state_body.get().decode()

    async def _rotate(self, request: web.Request, response: web.StreamResponse) -> None:
        """With every connection taken, each answer ends its connection, so that readers
        past the cap get their turn too rather than 503 for as long as the first keep
        theirs alive."""
        if self._guard is not None and self._guard.full:
            response.force_close()

    async def _render(self, camera: CameraState) -> tuple[int, bytes] | None:
        return await anyio.to_thread.run_sync(camera.snapshot_jpeg, limiter=self._jpeg_limiter)

    def _camera(self, request: web.Request) -> CameraState:
        """The camera ``?camera=NAME`` names (the first without it), if it shows images."""
        try:
            return self.telemetry.showing(request.query.get("camera"))
        except LookupError as exc:
            raise web.HTTPNotFound(text=f"{exc}\n") from None

    def _track(self) -> asyncio.Task[Any] | None:
        task = asyncio.current_task()
        if task is not None:
            self._streams.add(task)
        return task

    # --------------------------------------------------------------- routes

    async def _index(self, request: web.Request) -> web.Response:
        page, content_type = self._static["index.html"]
        # The state now, in the page: its first paint shows the count (or unknown and why)
        # without waiting for the first Server-Sent Event. Scrubbed like every JSON body.
        body = page_with_state(page, self._state_json())
        return web.Response(
            body=body,
            headers={"Content-Type": content_type, "Content-Security-Policy": PAGE_CSP},
        )

    async def _static_file(self, request: web.Request) -> web.Response:
        found = self._static.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        body, content_type = found
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        health = self.telemetry.health()
        body = {"ok": health.ok, "status": health.status, "reason": health.summary}
        return self._json(body, 200 if health.ok else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics_body.get(), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def _api_state(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.state_body.get(), content_type="application/json", charset="utf-8"
        )

    async def _snapshot(self, request: web.Request) -> web.Response:
        camera = self._camera(request)
        if camera.count is None and camera.frame_seq:
            # The last frame is not what the camera sees now: never serve it as current.
            return web.Response(status=503, text=f"no current frame: {camera.count_reason}\n",
                                headers={"Retry-After": "1"})  # fmt: skip
        snapshot = await self._render(camera)
        if snapshot is None:
            return web.Response(status=503, text="no frame yet\n", headers={"Retry-After": "1"})
        return web.Response(body=snapshot[1], headers={"Content-Type": "image/jpeg"})

    async def _picture(self, request: web.Request) -> web.Response:
        """One event's picture (``--snapshots``), by its file name, never a path."""
        folder = self.telemetry.device.config.outputs.snapshots
        if not self.telemetry.pictures_on or folder is None:
            raise web.HTTPNotFound(text="no pictures here (no --snapshots, or privacy mode)\n")
        name = request.match_info["name"]
        if not valid_name(name):
            raise web.HTTPNotFound(text="no such picture\n")
        data = await anyio.to_thread.run_sync(
            read_picture, folder, name, limiter=self._file_limiter
        )
        if data is None:
            raise web.HTTPNotFound(text="no such picture (pruned by the folder's cap?)\n")
        # A name is never reused (run id and time): the browser may keep what it loaded.
        cache = "private, max-age=86400, immutable"
        return web.Response(body=data, headers={"Content-Type": "image/jpeg",
                                                "Cache-Control": cache})  # fmt: skip

    def _viewers_full(self) -> web.Response | None:
        if len(self._streams) < self.max_viewers:
            return None
        self.viewers_refused += 1
        return web.Response(
            status=503,
            text=f"too many viewers ({self.max_viewers}); try again soon\n",
            headers={"Retry-After": "5"},
        )

    async def _events(self, request: web.Request) -> web.StreamResponse:
        if (full := self._viewers_full()) is not None:
            return full
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        task = self._track()
        try:
            await push_states(
                response,
                self.telemetry.state_changes,
                self._state_json,
                min_interval_s=self.sse_min_interval_s,
                tick_s=self.sse_tick_s,
            )
        finally:
            self._streams.discard(task)
        return response

    async def _mjpeg(self, request: web.Request) -> web.StreamResponse:
        camera = self._camera(request)
        if (full := self._viewers_full()) is not None:
            return full
        response = web.StreamResponse(
            headers={"Content-Type": f"multipart/x-mixed-replace; boundary={MJPEG_BOUNDARY}"}
        )
        await response.prepare(request)
        task = self._track()
        try:
            await push_frames(
                response,
                camera.frame_changes,
                lambda: camera.frame_seq,
                lambda: self._render(camera),
                boundary=MJPEG_BOUNDARY,
                idle_s=self.mjpeg_idle_s,
                interval_s=self.mjpeg_interval_s,
            )
        finally:
            self._streams.discard(task)
        return response


__all__ = ["StatusServer"]
