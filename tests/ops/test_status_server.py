"""The status server over real HTTP (aiohttp on loopback), driven by a fake app."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import cv2
import numpy as np
import pytest

from device.config import Config, ConfigError
from device.events import CountChanged, SourceStateEvent
from device.feeds.runner import SourceState
from device.outputs.page.http_address import HttpAddress, parse_http
from device.outputs.page.server import MJPEG_BOUNDARY, StatusServer
from device.outputs.telemetry import Telemetry
from device.vision.percept import Percept
from tests.ops.support import FakeApp, perceived
from tests.percepts import make_percept

pytestmark = pytest.mark.anyio
STATIC = Path(__file__).resolve().parents[2] / "device" / "outputs" / "page" / "static"


@contextlib.asynccontextmanager
async def serving(
    app: FakeApp, address: HttpAddress | None = None, **options: Any
) -> AsyncIterator[tuple[StatusServer, Telemetry, str]]:
    telemetry = Telemetry(app)
    server = StatusServer(telemetry, address or HttpAddress("127.0.0.1", 0), **options)
    server.listen()
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        try:
            yield server, telemetry, f"http://127.0.0.1:{server.port}"
        finally:
            tg.cancel_scope.cancel()


def counted(n: int = 1) -> CountChanged:
    return CountChanged(t=1.0, count=n, previous=None, raw=n, t_media=1.0)


def frame(n: int = 1) -> Percept:
    image = np.full((96, 128, 3), 60, np.uint8)
    return make_percept([[10, 10, 50, 80]] * n, image=image, detect_ms=9.0, seq=n)


async def next_sse(response: aiohttp.ClientResponse) -> dict[str, Any]:
    data = ""
    while True:
        line = (await response.content.readline()).decode()
        if line.startswith("data: "):
            data = line[6:].strip()
        elif line in ("\n", "") and data:
            parsed: dict[str, Any] = json.loads(data)
            return parsed


class Parts:
    """Reads JPEGs from a multipart stream whose parts end at the next boundary."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.buffer = b""
        self.delimiter = b"--" + MJPEG_BOUNDARY.encode() + b"\r\n"

    async def next(self) -> bytes:
        while True:
            start = self.buffer.find(self.delimiter)
            head_end = self.buffer.find(b"\r\n\r\n", start) if start >= 0 else -1
            end = self.buffer.find(b"\r\n" + self.delimiter, head_end) if head_end >= 0 else -1
            if end >= 0:
                part = self.buffer[head_end + 4 : end]
                self.buffer = self.buffer[end + 2 :]
                return part
            self.buffer += await self.response.content.readany()


async def test_page_and_assets_are_served_and_fetch_nothing_from_outside() -> None:
    async with serving(FakeApp()) as (_, _, base), aiohttp.ClientSession() as http:
        async with http.get(base + "/") as page:
            assert page.status == 200
            html = await page.text()
            assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        assert 'src="static/app.js"' in html and 'id="count"' in html
        for name in ("app.js", "app.css"):
            async with http.get(f"{base}/static/{name}") as asset:
                assert asset.status == 200
        async with http.get(base + "/static/..%2Fstatus_server.py") as missing:
            assert missing.status == 404
    for path in STATIC.iterdir():
        # An SVG names its namespace by a URI, which nothing fetches.
        text = path.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, path


async def test_healthz_200_while_counting_degraded_without_a_model_503_without_a_source() -> None:
    app = FakeApp()
    async with serving(app) as (_, tel, base), aiohttp.ClientSession() as http:
        async with http.get(base + "/healthz") as starting:
            assert starting.status == 503  # running, but nothing counted yet
            assert (await starting.json())["reason"] == "count unknown"
        perceived(tel, counted())
        async with http.get(base + "/healthz") as ok:
            assert ok.status == 200
            assert (await ok.json()) == {"ok": True, "status": "ok", "reason": "ok"}
        assert app.session is not None
        app.session.connection_state = "unreachable"
        async with http.get(base + "/healthz") as degraded:
            assert degraded.status == 200  # the device still counts
            body = await degraded.json()
            assert body["status"] == "degraded" and body["reason"].startswith("model unreachable")
        app.source_runner.state = SourceState.RECONNECTING
        why = "cannot open stream rtsp://cam/1"
        tel.write(SourceStateEvent(t=1.5, source="rtsp://cam/1", state="reconnecting", reason=why))
        async with http.get(base + "/healthz") as bad:
            assert bad.status == 503
            # Open to any monitor: the state, never the source or an error's text.
            assert (await bad.json())["reason"] == "source reconnecting"
        async with http.get(base + "/api/state") as state:  # behind the token, if any
            assert (await state.json())["health"]["reason"] == f"source reconnecting ({why})"
        app.source_runner.state = SourceState.RUNNING
        perceived(
            tel, CountChanged(t=2.0, count=None, previous=1, reason="no usable frame for 3 s")
        )
        async with http.get(base + "/healthz") as stale:
            assert stale.status == 503
            assert (await stale.json())["reason"] == "count unknown"
        async with http.get(base + "/metrics") as metrics:
            body = await metrics.text()
        # An unknown count is left out, never exported as the last value (or as 0).
        assert "\nlookout_people{" not in body and "\nlookout_people_raw{" not in body
        assert "\nlookout_healthy 0.0" in body


async def test_metrics_are_prometheus_text() -> None:
    app = FakeApp()
    app.capture.stats.frames_read = 12
    async with serving(app) as (_, tel, base), aiohttp.ClientSession() as http:
        tel.on_percept(frame())
        async with http.get(base + "/metrics") as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            body = await response.text()
    assert 'lookout_frames_read_total{camera="main"} 12.0' in body
    assert 'lookout_detector_latency_seconds_count{camera="main"} 1.0' in body


async def test_snapshot_is_the_annotated_frame_once_there_is_one() -> None:
    async with serving(FakeApp()) as (_, tel, base), aiohttp.ClientSession() as http:
        async with http.get(base + "/snapshot.jpg") as none_yet:
            assert none_yet.status == 503
        tel.write(counted())
        tel.on_percept(frame())
        async with http.get(base + "/snapshot.jpg") as response:
            assert response.status == 200 and response.content_type == "image/jpeg"
            image = cv2.imdecode(np.frombuffer(await response.read(), np.uint8), cv2.IMREAD_COLOR)
        # The camera went away: the last frame is not served as what it sees now.
        perceived(
            tel, CountChanged(t=3.0, count=None, previous=1, reason="camera failed at 12:00:00")
        )
        async with http.get(base + "/snapshot.jpg") as stale:
            assert stale.status == 503
            assert await stale.text() == "no current frame: camera failed at 12:00:00\n"
    assert image is not None and image.shape == (96, 128, 3)


async def test_privacy_mode_serves_no_image_anywhere() -> None:
    app = FakeApp(config=Config.of(device_id="p", model="local", privacy=True))
    async with serving(app) as (_, tel, base), aiohttp.ClientSession() as http:
        tel.on_percept(frame())
        for path in ("/snapshot.jpg", "/stream.mjpg"):
            async with http.get(base + path) as response:
                assert response.status == 404, path
        async with http.get(base + "/api/state") as response:
            state = await response.json()
    assert state["privacy"] is True and state["frame_seq"] == 0


async def test_events_stream_pushes_each_change() -> None:
    async with (
        serving(FakeApp(), sse_min_interval_s=0.0, sse_tick_s=30) as (_, tel, base),
        aiohttp.ClientSession() as http,
        http.get(base + "/events") as response,
    ):
        assert response.headers["Content-Type"] == "text/event-stream"
        first = await next_sse(response)
        assert first["count"] is None
        perceived(tel, CountChanged(t=1.0, count=5, previous=None, raw=5, t_media=1.0))
        with anyio.fail_after(5):  # the tick is 30 s: only the change can deliver it
            second = await next_sse(response)
    assert second["count"] == 5 and second["history"] == [[1.0, 5]]


async def test_mjpeg_sends_each_new_frame_as_a_jpeg_part() -> None:
    async with (
        serving(FakeApp(), mjpeg_max_fps=1000) as (_, tel, base),
        aiohttp.ClientSession() as http,
        http.get(base + "/stream.mjpg") as response,
    ):
        assert response.content_type == "multipart/x-mixed-replace"
        parts = Parts(response)
        tel.on_percept(frame(1))
        with anyio.fail_after(5):
            first = await parts.next()
            tel.on_percept(frame(2))
            second = await parts.next()
    assert first[:2] == b"\xff\xd8" and second[:2] == b"\xff\xd8" and first != second


async def test_stop_button_route_calls_stop_streaming() -> None:
    app = FakeApp()
    assert app.session is not None
    app.session.streams = [{"id": "c1", "name": "count_people"}]
    async with serving(app) as (_, _, base), aiohttp.ClientSession() as http:
        body = {"function_name": "count_people", "call_id": "c1"}
        async with http.post(base + "/api/streams/stop", json=body) as response:
            assert response.status == 200
            assert (await response.json())["status"].startswith("Successfully stopped")
        assert app.session.stop_calls == [("count_people", "c1")]
        # A cross-site form cannot send JSON; plain form posts are refused.
        async with http.post(base + "/api/streams/stop", data={"function_name": "x"}) as form:
            assert form.status == 415
        async with http.post(base + "/api/streams/stop", json={"call_id": 3}) as bad:
            assert bad.status == 400
        async with http.get(base + "/api/streams/stop") as wrong_method:
            assert wrong_method.status == 405
    assert app.session.stop_calls == [("count_people", "c1")]


async def test_start_button_route_starts_a_device_call_of_a_streaming_tool_only() -> None:
    app = FakeApp()
    assert app.session is not None
    async with serving(app) as (_, _, base), aiohttp.ClientSession() as http:
        body = {"function_name": "count_people"}
        async with http.post(base + "/api/streams/start", json=body) as response:
            assert response.status == 200
            answer = await response.json()
        assert answer == {"status": "started count_people as a device call", "id": "device-1"}
        async with http.post(base + "/api/streams/start", json={"function_name": "rm"}) as bad:
            assert bad.status == 400
            assert "not a streaming tool (these are: count_people)" in (await bad.json())["error"]
        async with http.post(base + "/api/streams/start", data={"function_name": "x"}) as form:
            assert form.status == 415
    assert app.session.start_calls == [("count_people", {})]


async def test_token_guards_every_route_but_healthz() -> None:
    token = "tok-3f9a81c2"
    routes = ("/", "/static/app.js", "/metrics", "/snapshot.jpg", "/api/state", "/events")
    async with serving(FakeApp(), token=token) as (_, tel, base):
        tel.on_percept(frame())
        tel.write(counted())
        async with aiohttp.ClientSession() as http:
            for path in routes:
                async with http.get(base + path) as response:
                    assert response.status == 401, path
                    assert token not in await response.text()
            async with http.post(base + "/api/streams/stop", json={"call_id": "x"}) as post:
                assert post.status == 401
            async with http.get(base + "/healthz") as health:
                assert health.status == 200
            wrong = {"Authorization": "Bearer nope"}
            async with http.get(base + "/metrics", headers=wrong) as response:
                assert response.status == 401
            bearer = {"Authorization": f"Bearer {token}"}
            for path in routes[:-1]:
                async with http.get(base + path, headers=bearer) as response:
                    assert response.status == 200, path
        # A browser: ?token= once, then a cookie carries it (EventSource cannot set headers).
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(f"{base}/?token={token}", allow_redirects=False) as first:
                assert first.status == 303 and first.headers["Location"] == "/"
                cookie = first.cookies["lookout_session"]
                assert cookie["httponly"] and cookie["samesite"] == "Strict"
                assert token not in cookie.value
            async with browser.get(f"{base}/?token=wrong") as bad:
                assert bad.status == 200  # the cookie is enough; a wrong token is ignored
            async with browser.get(base + "/events") as events:
                assert events.status == 200
                assert (await next_sse(events))["device_id"] == "test-cam"
        async with (
            aiohttp.ClientSession() as stranger,
            stranger.get(f"{base}/?token=wrong", allow_redirects=False) as bad,
        ):
            assert bad.status == 401


async def test_loopback_server_refuses_foreign_host_headers() -> None:
    async with serving(FakeApp()) as (_, tel, base), aiohttp.ClientSession() as http:
        tel.write(counted())
        async with http.get(base + "/api/state", headers={"Host": "evil.example:80"}) as r:
            assert r.status == 421
        for host in ("localhost:9000", "127.0.0.1", "[::1]:8765"):
            async with http.get(base + "/api/state", headers={"Host": host}) as ok:
                assert ok.status == 200, host
        # /healthz too: a page elsewhere learns nothing of the device, not even its health.
        async with http.get(base + "/healthz", headers={"Host": "evil.example"}) as health:
            assert health.status == 421


async def test_non_loopback_bind_warns_and_token_still_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "lookout.status")
    address = HttpAddress("0.0.0.0", 0)
    # Reached from another machine, at the device's LAN address.
    lan = {"Host": "192.168.1.20:8765"}
    async with (
        serving(FakeApp(), address) as (server, tel, base),
        aiohttp.ClientSession() as http,
    ):
        port = server.port
        perceived(tel, counted(3))
        async with http.get(base + "/api/state", headers=lan) as r:
            assert r.status == 200  # without a token, anyone on the network (so it warns)
            assert (await r.json())["count"] == 3
    assert "WITHOUT a token" in caplog.text
    # Port 0 asks for any free port: the warning names the one a user can reach.
    assert f"listens on 0.0.0.0:{port}," in caplog.text and ":0," not in caplog.text
    caplog.clear()
    token = "t0k3n-abc"
    async with serving(FakeApp(), address, token=token) as (_, tel, base):
        perceived(tel, counted(3))
        async with aiohttp.ClientSession() as http:
            for headers in ({}, {"Authorization": "Bearer t0k3n-abd"}, {"Authorization": token}):
                async with http.get(base + "/api/state", headers=lan | headers) as refused:
                    assert refused.status == 401, headers
                    assert "count" not in await refused.text()
            bearer = {"Authorization": f"Bearer {token}"}
            async with http.get(base + "/api/state", headers=lan | bearer) as granted:
                assert granted.status == 200
                assert (await granted.json())["count"] == 3
        # A browser on the network: ?token= once, then its cookie; a wrong one gets nothing.
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(f"{base}/?token=t0k3n-abd", headers=lan) as wrong:
                assert wrong.status == 401
            async with browser.get(f"{base}/?token={token}", headers=lan) as page:
                assert page.status == 200 and "text/html" in page.headers["Content-Type"]
            async with browser.get(base + "/api/state", headers=lan) as state:
                assert state.status == 200 and (await state.json())["count"] == 3
    assert "requires the token" in caplog.text and "WITHOUT" not in caplog.text


async def test_taken_port_is_one_line_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = StatusServer(Telemetry(FakeApp()), HttpAddress("127.0.0.1", port))
        with pytest.raises(ConfigError, match=rf"cannot listen on 127.0.0.1:{port}") as info:
            server.listen()
    assert "\n" not in str(info.value)


async def test_shutdown_is_prompt_with_streams_open() -> None:
    app = FakeApp()
    telemetry = Telemetry(app)
    server = StatusServer(telemetry, HttpAddress("127.0.0.1", 0))
    server.listen()
    telemetry.on_percept(frame())
    base = f"http://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession() as http:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                await tg.start(server.run)
                events = await http.get(base + "/events")
                mjpeg = await http.get(base + "/stream.mjpg")
                await next_sse(events)
                await Parts(mjpeg).next()
                tg.cancel_scope.cancel()
        events.close()
        mjpeg.close()
    with pytest.raises(aiohttp.ClientConnectorError):
        async with aiohttp.ClientSession() as http, http.get(base + "/healthz"):
            pass


@pytest.mark.parametrize(
    ("spec", "host", "port", "loopback"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765, True),
        ("8080", "127.0.0.1", 8080, True),
        ("localhost:0", "localhost", 0, True),
        (":8765", "0.0.0.0", 8765, False),
        ("0.0.0.0:80", "0.0.0.0", 80, False),
        ("[::1]:9000", "::1", 9000, True),
        ("cam.local:9000", "cam.local", 9000, False),
    ],
)
def test_parse_http(spec: str, host: str, port: int, loopback: bool) -> None:
    address = parse_http(spec)
    assert (address.host, address.port, address.loopback) == (host, port, loopback)


@pytest.mark.parametrize("spec", ["", "host", "host:http", "1.2.3.4:70000", "::1:80", "[::1]"])
def test_parse_http_rejects(spec: str) -> None:
    with pytest.raises(ConfigError, match="http: "):
        parse_http(spec)


async def test_the_page_is_served_with_the_state_now_scrubbed_and_safe_in_html() -> None:
    """The first paint needs no push: index.html carries the state, as /api/state says it."""
    secret = "key-5e1f0a"
    async with serving(FakeApp(), secrets=(secret,)) as (_, tel, base):
        tel.on_percept(frame(2))
        tel.write(counted(2))
        tel.model_text.append({"t": 1.0, "text": f"</script><!-- {secret} & more"})
        async with aiohttp.ClientSession() as http, http.get(base + "/") as page:
            html = await page.text()
        start = html.index('<script type="application/json" id="state-now">')
        block = html[start : html.index("</script>", start)].split(">", 1)[1]
        assert "<" not in block and "&" not in block  # nothing that HTML would read
        state = json.loads(block)
        assert state["count"] == 2 and state["device_id"] == "test-cam"
        assert secret not in html and state["model_text"][-1]["text"].startswith("</script><!--")


async def test_a_browser_without_the_token_gets_a_page_that_says_how_to_give_it() -> None:
    token = "tok-8d21c7"
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    bad = "<script>alert(1)</script>"
    async with serving(FakeApp(), token=token) as (_, tel, base):
        tel.write(counted())
        async with aiohttp.ClientSession() as http:
            for path in ("/", "/snapshot.jpg", f"/no-such-page?x={bad}"):
                async with http.get(base + path, headers=browser) as page:
                    assert page.status == 401, path
                    assert page.headers["Content-Type"].startswith("text/html"), path
                    assert page.headers["WWW-Authenticate"] == 'Bearer realm="lookout"'
                    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
                    html = await page.text()
                    assert html.lstrip().lower().startswith("<!doctype html>")
                    assert "?token=" in html and "Authorization: Bearer" in html
                    assert "<script" not in html.lower() and token not in html
            # A wrong token in the address is said to be wrong, never shown back.
            async with http.get(f"{base}/?token={bad}", headers=browser) as wrong:
                assert wrong.status == 401
                html = await wrong.text()
                assert "not accepted" in html and "alert" not in html
            # Scripts and the API keep their short plain answers, whatever they accept.
            plain_answers = (
                ("/", "*/*"),
                ("/api/state", browser["Accept"]),
                ("/events", "text/event-stream"),
                ("/metrics", "text/html"),
            )
            for path, accept in plain_answers:
                async with http.get(base + path, headers={"Accept": accept}) as plain:
                    assert plain.status == 401, path
                    assert plain.headers["Content-Type"].startswith("text/plain"), path
                    assert plain.headers["WWW-Authenticate"] == 'Bearer realm="lookout"'
                    assert (await plain.text()).startswith("unauthorized: send Authorization")
            async with http.post(base + "/api/streams/stop", json={}, headers=browser) as post:
                assert post.status == 401 and "text/plain" in post.headers["Content-Type"]
