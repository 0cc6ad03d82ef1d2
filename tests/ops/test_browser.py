"""The status page in a real headless Chromium, fed by the real app replaying the sample video.

Debian's chromium, driven by Playwright's Python package (never `playwright install`).
Without /usr/bin/chromium these tests skip, except under CI=1/true or with
LOOKOUT_REQUIRE_BROWSER set, where they fail: CI installs chromium, so a skip
there would hide a broken set-up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from playwright.async_api import Page, async_playwright

from device.outputs.page.http_address import HttpAddress
from device.outputs.page.server import StatusServer
from device.outputs.telemetry import Telemetry
from tests.cameras import VtestCamera, vtest_frames
from tests.ops.apprun import running_app
from tests.ops.support import CHROMIUM_ARGS, FakeApp
from tests.percepts import make_percept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
COUNT_IS_NUMBER = "() => /^\\d+$/.test(document.getElementById('count').textContent)"
COUNT_CHANGED = (
    "(was) => { const t = document.getElementById('count').textContent;"
    " return /^\\d+$/.test(t) && t !== was; }"
)
COUNT_UNKNOWN = "() => document.getElementById('count').textContent === '–'"
IMAGE_SHOWN = (
    "() => { const i = document.getElementById('frame');"
    " return !i.hidden && i.complete && i.naturalWidth > 0; }"
)


@contextlib.asynccontextmanager
async def browser_page(chromium: Path) -> AsyncIterator[Page]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 820})
            yield page
        finally:
            await browser.close()


async def screenshot(page: Page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    artifacts = os.environ.get("LOOKOUT_ARTIFACTS")
    if artifacts:
        await anyio.to_thread.run_sync(copy_artifact, path, Path(artifacts))
    return path


def copy_artifact(path: Path, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, directory / path.name)


async def test_page_count_follows_the_replayed_video(chromium: Path, tmp_path: Path) -> None:
    async with running_app(tmp_path) as run, browser_page(chromium) as page:
        await page.goto(run.url)
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
        first = await page.text_content("#count")
        await page.wait_for_function(COUNT_CHANGED, arg=first, timeout=20_000)
        second = await page.text_content("#count")
        await page.wait_for_function(IMAGE_SHOWN, timeout=10_000)
        assert await page.text_content("#connection-state") == "model: connected"
        assert await page.text_content("#source-state") == "source: running"
        assert "people in view" in (await page.text_content("#model-text") or "")
        assert await page.is_visible("button.stop")
        await screenshot(page, tmp_path, "status-page.png")
    counts = [e["count"] for e in run.events() if e["type"] == "count"]
    shown = [int(first or -1), int(second or -1)]
    # The page showed two consecutive counts of the app, in order.
    assert any(counts[i : i + 2] == shown for i in range(len(counts) - 1)), (shown, counts)


async def test_stop_ends_the_models_stream_the_count_goes_on_and_start_is_a_device_call(
    chromium: Path, tmp_path: Path
) -> None:
    async with running_app(tmp_path) as run, browser_page(chromium) as page:
        await page.goto(run.url)
        await page.wait_for_selector("button.stop", timeout=20_000)
        await page.click("button.stop")
        await page.wait_for_selector("#no-streams", state="visible", timeout=10_000)
        assert await page.is_hidden("#streams")
        assert "Successfully stopped" in (await page.text_content("#stream-message") or "")
        await screenshot(page, tmp_path, "status-page-stopped.png")
        assert run.app.session is not None and run.app.session.running_streams() == []
        # The device's eyes stay open: the page keeps getting new counts after the stop.
        stopped_at = max(e["t"] for e in run.events() if e["type"] == "stream_stopped")
        telemetry = run.ops.telemetry
        assert telemetry is not None
        with anyio.fail_after(30):
            while not any(e["type"] == "count" and e["t"] > stopped_at for e in run.events()):
                await telemetry.state_changes.wait(telemetry.state_changes.version)
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=10_000)
        # Start runs the tool again as the device's own call.
        await page.click("button.start")
        await page.wait_for_selector('td[data-key="by"]:text("device")', timeout=10_000)
    stopped = [e for e in run.events() if e["type"] == "stream_stopped"]
    assert (stopped[0]["name"], stopped[0]["reason"]) == ("count_people", "stop_streaming")
    started = [e for e in run.events() if e["type"] == "stream_started"]
    assert [e["by"] for e in started] == ["model", "device"]


async def test_token_once_in_the_url_then_the_cookie_carries_the_page(
    chromium: Path, tmp_path: Path
) -> None:
    token = "page-token-91c4"
    async with running_app(tmp_path, http_token=token) as run, browser_page(chromium) as page:
        refused = await page.goto(run.url)
        assert refused is not None and refused.status == 401
        await page.goto(f"{run.url}?token={token}")
        assert page.url == run.url  # the token left the address bar
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)  # EventSource: cookie
        await page.wait_for_function(IMAGE_SHOWN, timeout=10_000)  # MJPEG <img>: cookie
        assert token not in await page.content()


async def test_privacy_page_never_asks_for_an_image(chromium: Path, tmp_path: Path) -> None:
    async with running_app(tmp_path, privacy=True) as run, browser_page(chromium) as page:
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        await page.goto(run.url)
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
        assert await page.is_hidden("#frame")
        assert "Privacy mode" in (await page.text_content("#no-image") or "")
        await screenshot(page, tmp_path, "status-page-privacy.png")
    # The listener saw the page's own requests (so an empty list below means something)...
    assert any(url.endswith("/events") for url in requested), requested
    assert any(url.endswith("/static/app.js") for url in requested), requested
    # ...and not one of them was for an image.
    assert not [url for url in requested if url.endswith((".mjpg", ".jpg"))], requested


CENTER_PIXEL = (
    "() => { const i = document.getElementById('frame');"
    " if (i.hidden || !i.naturalWidth) return null;"
    " const c = document.createElement('canvas'); c.width = i.naturalWidth;"
    " c.height = i.naturalHeight; const x = c.getContext('2d'); x.drawImage(i, 0, 0);"
    " return Array.from(x.getImageData(c.width / 2, c.height / 2, 1, 1).data.slice(0, 3)); }"
)


async def test_page_shows_the_newest_frame_not_the_one_before(
    chromium: Path, tmp_path: Path
) -> None:
    """Chromium draws an MJPEG part only once the next one begins; the server must
    start the next part right after each frame, or the page lags one frame behind."""
    app = FakeApp()
    telemetry = Telemetry(app)
    server = StatusServer(telemetry, HttpAddress("127.0.0.1", 0))
    server.listen()

    def show(bgr: tuple[int, int, int]) -> None:
        image = np.zeros((60, 80, 3), np.uint8)
        image[:] = bgr
        telemetry.on_percept(make_percept(image=image))

    async with browser_page(chromium) as page, anyio.create_task_group() as tg:
        await tg.start(server.run)
        show((0, 0, 255))
        await page.goto(f"http://127.0.0.1:{server.port}/")
        for bgr in ((0, 0, 255), (0, 255, 0), (255, 0, 0)):
            show(bgr)
            rgb = list(reversed(bgr))
            await page.wait_for_function(
                f"() => {{ const p = ({CENTER_PIXEL})(); const want = {rgb};"
                " return p !== null && p.every((v, k) => Math.abs(v - want[k]) < 30); }",
                timeout=5_000,
            )
        tg.cancel_scope.cancel()  # the server only: the browser closes outside this group


async def test_the_page_says_unknown_and_why_while_the_camera_is_gone_then_counts_again(
    chromium: Path, tmp_path: Path
) -> None:
    camera = VtestCamera(vtest_frames())
    flags = {"detect_fps": 10.0}
    async with running_app(tmp_path, source=camera, **flags) as run, browser_page(chromium) as page:
        run.app.source_runner.initial_backoff_s = 0.2
        run.app.source_runner.max_backoff_s = 0.5
        await page.goto(run.url)
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
        assert "people in view" in (await page.text_content("#count-label") or "")
        camera.unplugged = True
        await page.wait_for_function(COUNT_UNKNOWN, timeout=10_000)
        detail = await page.text_content("#count-detail") or ""
        assert detail.startswith("camera reconnecting since "), detail
        assert await page.text_content("#count-label") == "count unknown"
        assert "in this frame" not in detail  # no stale number beside it
        # The count over the image says so too, at the same moment.
        assert await page.text_content("#frame-banner") == "count unknown"
        assert await page.get_attribute("#count", "class") == "unknown"
        assert "retry in" not in detail  # a reason that stays true while it is shown
        # The last frame is greyed and said to be old; the snapshot is refused, not stale.
        assert "stale" in (await page.get_attribute("#frame", "class") or "")
        assert (await page.text_content("#source-name") or "").endswith("last frame, not live")
        snapshot = await page.request.get(run.url + "snapshot.jpg")
        assert snapshot.status == 503 and "no current frame: camera reconnecting" in (
            await snapshot.text()
        )
        await screenshot(page, tmp_path, "status-page-camera-gone.png")
        camera.unplugged = False
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
        assert "in this frame" in (await page.text_content("#count-detail") or "")
        assert "stale" not in (await page.get_attribute("#frame", "class") or "")
        assert (await page.request.get(run.url + "snapshot.jpg")).status == 200
    counts = [e for e in run.events() if e["type"] == "count"]
    gone = [i for i, e in enumerate(counts) if e["count"] is None]
    # Unknown once while the camera was gone (no old frame brought it back), and again
    # when the run ended; counts in between.
    (outage, end) = gone
    assert counts[outage]["reason"].startswith("camera reconnecting since ")
    assert counts[end]["reason"].startswith("camera ended at ")
    assert all(isinstance(e["count"], int) for e in counts[outage + 1 : end])
    assert end - outage >= 2


async def test_the_page_fits_a_phone_without_sideways_scrolling(
    chromium: Path, tmp_path: Path
) -> None:
    async with running_app(tmp_path) as run, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            for width in (390, 360, 320):
                page = await browser.new_page(viewport={"width": width, "height": 844})
                await page.goto(run.url)
                await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
                await page.wait_for_selector("button.stop", timeout=10_000)  # the widest row
                overflow = await page.evaluate(
                    "() => document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 0, f"{overflow} px too wide at {width} px"
                if width == 390:
                    await screenshot(page, tmp_path, "status-page-phone.png")
                await page.close()
        finally:
            await browser.close()


PAGE_SAYS_STILL = (
    "() => { const d = document.getElementById('perception-detail');"
    " return d.dataset.gated === 'true' && /[1-9]\\d* frames? gated/.test(d.textContent); }"
)
PAGE_SAYS_MOTION = (
    "() => { const d = document.getElementById('perception-detail');"
    " return d.dataset.gated === 'false' && d.textContent.includes(' · motion · '); }"
)


async def test_the_page_says_when_the_motion_gate_holds_a_still_scene_and_what_it_costs(
    chromium: Path, tmp_path: Path
) -> None:
    moving = vtest_frames(40)
    camera = VtestCamera([moving[0]])  # one frame over and over: nothing moves
    flags = {"detect_fps": 5.0}
    async with running_app(tmp_path, source=camera, **flags) as run, browser_page(chromium) as page:
        await page.goto(run.url)
        await page.wait_for_function(COUNT_IS_NUMBER, timeout=20_000)
        await page.wait_for_function(PAGE_SAYS_STILL, timeout=20_000)
        detail = await page.text_content("#perception-detail") or ""
        assert "still: last detections stand" in detail, detail
        assert "decode " in detail and "/s" in detail, detail
        await screenshot(page, tmp_path, "status-page-still-scene.png")
        with camera.lock:
            camera.frames = moving  # people walk again
        await page.wait_for_function(PAGE_SAYS_MOTION, timeout=20_000)
        assert "detector " in (await page.text_content("#perception-detail") or "")


async def test_the_page_shows_the_spending_cap_only_when_there_is_one(chromium: Path) -> None:
    app = FakeApp()
    server = StatusServer(Telemetry(app), HttpAddress("127.0.0.1", 0))
    server.listen()
    badge = "document.getElementById('budget-state')"
    async with browser_page(chromium) as page, anyio.create_task_group() as tg:
        await tg.start(server.run)
        await page.goto(f"http://127.0.0.1:{server.port}/")
        # Rendered (the health badge says something), and without a cap no budget badge.
        await page.wait_for_function(
            "() => document.getElementById('health').textContent !== '…'", timeout=5_000
        )
        assert await page.evaluate(f"() => {badge}.hidden")
        app.budget = {
            "state": "saving",
            "limit": "hour",
            "hour": {"used": 850, "limit": 1000},
            "session": {"used": 850, "limit": None},
            "frames": False,
            "looks": False,
            "thinned": 0,
        }
        await page.wait_for_function(
            f"() => !{badge}.hidden && {badge}.textContent === 'budget: saving'", timeout=10_000
        )
        title = await page.get_attribute("#budget-state", "title")
        assert title == "850 of 1000 tokens an hour · no frames, no looks"
        tg.cancel_scope.cancel()
