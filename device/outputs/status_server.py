"""The status server: a live page, snapshot, MJPEG, health and Prometheus metrics.

An aiohttp server that runs as an App service inside the app's event loop. Its
socket is bound before the app starts (``listen``), so a taken port or a bad
address is reported as one line before anything runs. Live updates go out as
Server-Sent Events (state, about 4 per second at most) and MJPEG (the annotated
frame); nothing polls for images.

Security: the server never serves configuration, and every JSON body it sends
is scrubbed of the configured secrets. It refuses requests whose Host header
does not name this device, /healthz included (DNS rebinding). /healthz says
states only (no source, no error text): it is open to monitors. With a
token, every route but /healthz needs ``Authorization: Bearer <token>`` or the
cookie that ``/?token=<token>`` sets once (EventSource and <img> cannot send
headers, but they do send same-origin cookies). State changes need a JSON body,
which a cross-site form cannot send without a CORS preflight that we never answer.

Kept whole: one aiohttp application; its routes share the guard (Host, token,
cookie), the limits on viewers and the security headers, which must not drift
apart between routes.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import hmac
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from aiohttp import web
from anyio.abc import TaskStatus
from prometheus_client import CONTENT_TYPE_LATEST

from device.config import ConfigError
from device.outputs.connection_guard import ConnectionGuard, GuardStats, cap_for_limit
from device.outputs.controls import Controls
from device.outputs.host_check import HostPolicy
from device.outputs.http_address import HttpAddress, same_site
from device.outputs.page_files import (
    PAGE_CSP,
    REFUSED_CSP,
    page_with_state,
    static_files,
    unauthorized_page,
)
from device.outputs.picture_files import read_picture, valid_name
from device.outputs.pictures import ROUTE as PICTURES_ROUTE
from device.outputs.push import push_frames, push_states
from device.outputs.request_log import requests_log
from device.outputs.telemetry import Telemetry
from live.redact import redact

CLEANUP_S = 0.3  # at the end of a run, at most this long for requests in flight
log = logging.getLogger("lookout.status")


COOKIE = "lookout_session"
MJPEG_BOUNDARY = "lookout-frame-7c1d2e9a"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    ) -> None:
        """``connections``: where the server counts its connections (the metrics read
        them from the same object; made here when not given)."""
        self.telemetry = telemetry
        self.address = address
        self.hosts = HostPolicy.for_bind(address.loopback, hosts)
        self.max_connections = max_connections
        self.max_viewers = max_viewers
        self.head_timeout_s = head_timeout_s
        self.body_timeout_s = body_timeout_s
        self.keepalive_s = keepalive_s
        self.mjpeg_idle_s = mjpeg_idle_s
        self.connections = connections if connections is not None else GuardStats()
        self.viewers_refused = 0
        self.token = token or None
        self.secrets = tuple(s for s in (*secrets, token) if s)
        self.announce = announce
        self.sse_min_interval_s = sse_min_interval_s
        self.sse_tick_s = sse_tick_s
        self.mjpeg_interval_s = 1.0 / mjpeg_max_fps
        self.port = address.port
        self.note = ""  # said with the address (a default port that was in use)
        self._sock: socket.socket | None = None
        self._static = static_files()
        # A cookie derived from the token: it grants the same access, but a leaked
        # cookie (browser profile, proxy log) does not reveal the token itself.
        self._cookie = (
            hmac.new(self.token.encode(), b"lookout status cookie", hashlib.sha256).hexdigest()
            if self.token
            else ""
        )
        self._streams: set[asyncio.Task[Any]] = set()
        self._jpeg_limiter: anyio.CapacityLimiter | None = None
        self._file_limiter: anyio.CapacityLimiter | None = None

    # ------------------------------------------------------------- lifecycle

    def listen(self, *, fallback_ports: int = 0, given_as: str = "") -> None:
        """Bind the socket now, so that a taken port fails before the app starts.

        ``fallback_ports``: for the default address, a port in use is no reason to
        stop a device; the next free one of that many is taken instead (and said).
        ``given_as``: how the user gave the address (``--http``), named when it fails.
        """
        if self._sock is not None:
            return
        host = self.address.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        port = self.address.port
        while True:
            try:
                sock = socket.create_server((host, port), family=family, backlog=128)
                break
            except OSError as exc:
                in_use = exc.errno == errno.EADDRINUSE
                if in_use and port < self.address.port + fallback_ports and port:
                    port += 1
                    continue
                reason = exc.strerror or str(exc)
                if in_use:
                    reason = "the address is in use by another program"
                source = f" ({given_as})" if given_as else ""
                raise ConfigError(
                    f"status server: cannot listen on {self.address}{source}: {reason}"
                ) from None
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
        host = self.address.host
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}/"

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
        server: asyncio.Server | None = None
        try:
            server = await asyncio.get_running_loop().create_server(guard, sock=self._sock)
            if self.announce is not None:
                self.announce(f"status page: {self.url}{self.note}")
            task_status.started()
            await anyio.sleep_forever()
        finally:
            # Long-lived responses (SSE, MJPEG) would hold shutdown for the whole grace
            # period; end them first so the app exits promptly.
            for task in list(self._streams):
                task.cancel()
            if server is not None:
                server.close()
            # Bounded well inside the 2 s a signal has to end the run (device/app/run.py):
            # a request still being answered is cut rather than waited for.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_S):
                await runner.cleanup()
            self.close()

    def make_app(self) -> web.Application:
        web_app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        web_app.on_response_prepare.append(self._headers)
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
        return web_app

    # ------------------------------------------------------------ middleware

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.hosts.allows(request.host):
            # DNS rebinding: a page on another site that made its name point here. Also
            # /healthz: what the device is doing is no business of a page from elsewhere.
            return web.Response(
                status=421,
                text="unexpected Host header (add the name with --http-hosts if it is yours)\n",
            )
        if request.path == "/healthz":
            return await handler(request)  # a monitor needs no secret; it gets states only
        if self.token and not self._authorized(request):
            given = request.query.get("token")
            if given is not None and request.method == "GET" and self._token_matches(given):
                # Trade the token in the URL for a cookie, and drop it from the address bar.
                query = {k: v for k, v in request.query.items() if k != "token"}
                target = same_site(request.rel_url.path, query)
                response = web.Response(status=303, headers={"Location": target})
                response.set_cookie(
                    COOKIE, self._cookie, httponly=True, samesite="Strict", path="/"
                )
                return response
            return self._unauthorized(request, wrong_token=given is not None)
        return await handler(request)

    def _unauthorized(self, request: web.Request, *, wrong_token: bool) -> web.Response:
        """401: a browser opening a page gets a page that says how to give the token;
        scripts, the API and the streams get one plain line."""
        challenge = {"WWW-Authenticate": 'Bearer realm="lookout"'}
        if _browser_navigation(request):
            return web.Response(
                status=401,
                text=unauthorized_page(wrong_token=wrong_token),
                content_type="text/html",
                headers=challenge | {"Content-Security-Policy": REFUSED_CSP},
            )
        return web.Response(
            status=401,
            text="unauthorized: send Authorization: Bearer <token>, "
            "or open /?token=<token> once in a browser\n",
            headers=challenge,
        )

    def _token_matches(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and self._token_matches(value.strip()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self._cookie.encode())

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Cache-Control", "no-store")

    # -------------------------------------------------------------- helpers

    def _json(self, data: Any, status: int = 200) -> web.Response:
        return web.Response(
            status=status, text=self._scrub(json.dumps(data)), content_type="application/json"
        )

    def _scrub(self, text: str) -> str:
        return redact(text, self.secrets) if self.secrets else text

    def _state_json(self) -> str:
        return self._scrub(json.dumps(self.telemetry.state(), separators=(",", ":")))

    async def _render(self) -> tuple[int, bytes] | None:
        return await anyio.to_thread.run_sync(
            self.telemetry.snapshot_jpeg, limiter=self._jpeg_limiter
        )

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
        body = self._scrub(self.telemetry.metrics_text().decode())
        return web.Response(text=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _api_state(self, request: web.Request) -> web.Response:
        return web.Response(text=self._state_json(), content_type="application/json")

    async def _snapshot(self, request: web.Request) -> web.Response:
        if self.telemetry.privacy:
            raise web.HTTPNotFound(text="privacy mode: no images are served\n")
        if self.telemetry.count is None and self.telemetry.frame_seq:
            # The last frame is not what the camera sees now: never serve it as current.
            reason = self.telemetry.count_reason
            return web.Response(status=503, text=f"no current frame: {reason}\n",
                                headers={"Retry-After": "1"})  # fmt: skip
        snapshot = await self._render()
        if snapshot is None:
            return web.Response(status=503, text="no frame yet\n", headers={"Retry-After": "1"})
        return web.Response(body=snapshot[1], headers={"Content-Type": "image/jpeg"})

    async def _picture(self, request: web.Request) -> web.Response:
        """One event's picture (``--snapshots``), by its file name, never a path."""
        folder = self.telemetry.device.config.outputs.snapshots
        if self.telemetry.privacy or folder is None:
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
        if self.telemetry.privacy:
            raise web.HTTPNotFound(text="privacy mode: no images are served\n")
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
                self.telemetry.frame_changes,
                lambda: self.telemetry.frame_seq,
                self._render,
                boundary=MJPEG_BOUNDARY,
                idle_s=self.mjpeg_idle_s,
                interval_s=self.mjpeg_interval_s,
            )
        finally:
            self._streams.discard(task)
        return response


MACHINE_ROUTES = ("/api/", "/events", "/metrics")  # answered to scripts, even in a browser


def _browser_navigation(request: web.Request) -> bool:
    """A browser opening a page (it asks for HTML), not a script, a stream or the API."""
    return (
        request.method in ("GET", "HEAD")
        and "text/html" in request.headers.get("Accept", "")
        and not request.path.startswith(MACHINE_ROUTES)
    )


__all__ = ["StatusServer"]
