"""The status page's first paint, its 401 page and its streams table, in a real headless Chromium.

A fake app behind the real status server (as ``test_browser.py``'s newest-frame test):
what the page shows is set by the test, so each check is exact.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from playwright.async_api import Browser, Page, Route, async_playwright

from device.config import Config
from device.events import CountChanged
from device.outputs.page.http_address import HttpAddress
from device.outputs.page.server import StatusServer
from device.outputs.telemetry import Telemetry
from tests.ops.support import CHROMIUM_ARGS, FakeApp, perceived
from tests.percepts import make_percept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Records, before the page's own script runs, what #count says at each mutation and at
# the first animation frames, with the time; the paint entries say when it first painted.
WATCH_COUNT = """
window.__seen = [];
const look = (why) => {
  const c = document.getElementById('count');
  window.__seen.push({why, t: performance.now(), text: c ? c.textContent : null});
};
new MutationObserver(() => look('mutation')).observe(document, {subtree: true,
  childList: true, characterData: true});
let frames = 0;
const frame = () => { look('frame'); if (++frames < 3) requestAnimationFrame(frame); };
requestAnimationFrame(frame);
"""
FIRST_PAINT = """() => {
  const paints = performance.getEntriesByType('paint');
  const first = paints.find((p) => p.name === 'first-contentful-paint') || paints[0];
  return {first: first ? first.startTime : null, seen: window.__seen};
}"""


@contextlib.asynccontextmanager
async def served(
    app: FakeApp | None = None, **options: Any
) -> AsyncIterator[tuple[Telemetry, str]]:
    telemetry = Telemetry(app or FakeApp())
    server = StatusServer(telemetry, HttpAddress("127.0.0.1", 0), **options)
    server.listen()
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        try:
            yield telemetry, f"http://127.0.0.1:{server.port}/"
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def chromium_browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def no_events(route: Route) -> None:
    await route.abort()  # no Server-Sent Event ever reaches the page


async def first_paint_count(page: Page, url: str) -> tuple[str, list[dict[str, Any]]]:
    """What #count said when the page first painted (never waiting for an SSE push)."""
    await page.add_init_script(WATCH_COUNT)
    await page.route("**/events", no_events)
    await page.goto(url, wait_until="load")
    await page.wait_for_function("() => window.__seen.some((s) => s.why === 'frame')")
    result: dict[str, Any] = await page.evaluate(FIRST_PAINT)
    seen: list[dict[str, Any]] = result["seen"]
    first = result["first"]
    painted = first if first is not None else next(s["t"] for s in seen if s["why"] == "frame")
    before = [s["text"] for s in seen if s["t"] <= painted and s["text"] is not None]
    return (before[-1] if before else ""), seen


async def test_the_first_paint_shows_the_count_not_an_empty_skeleton(chromium: Path) -> None:
    async with served() as (telemetry, url), chromium_browser(chromium) as browser:
        telemetry.on_percept(make_percept([[10, 10, 50, 80]] * 3, seq=1))
        perceived(telemetry, CountChanged(t=1.0, count=3, previous=None, raw=3, t_media=1.0))
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        shown, seen = await first_paint_count(page, url)
        assert shown == "3", seen
        assert await page.text_content("#count-label") == "people in view"
        assert await page.text_content("#live-state") != "live"  # no SSE came: not said live
        assert not [e for e in errors if "Content Security Policy" in e], errors


async def test_the_first_paint_says_unknown_and_why(chromium: Path) -> None:
    async with served() as (telemetry, url), chromium_browser(chromium) as browser:
        page = await browser.new_page(viewport={"width": 390, "height": 844})
        shown, seen = await first_paint_count(page, url)
        assert shown == "–", seen
        assert await page.text_content("#count-label") == "count unknown"
        reason = telemetry.state()["count_reason"]
        assert reason and reason in (await page.text_content("#count-detail") or "")


async def test_the_embedded_state_cannot_end_its_script_element(chromium: Path) -> None:
    """The state is JSON in a data block: a model's text with </script> stays text."""
    async with served() as (telemetry, url), chromium_browser(chromium) as browser:
        said = "</script><script>document.title='owned'</script><!-- & \u2028"
        telemetry.model_text.append({"t": 1.0, "text": said})
        page = await browser.new_page()
        await page.route("**/events", no_events)
        await page.goto(url)
        assert await page.title() == "Lookout"
        assert said in (await page.text_content("#model-text") or "")
        embedded = await page.text_content("#state-now") or ""
        assert json.loads(embedded)["model_text"][-1]["text"] == said


async def test_without_the_token_the_browser_is_told_how_to_give_it_and_the_form_works(
    chromium: Path,
) -> None:
    token = "page-token-5b3e"
    async with served(token=token) as (telemetry, url), chromium_browser(chromium) as browser:
        telemetry.on_percept(make_percept([[10, 10, 50, 80]] * 2, seq=1))
        perceived(telemetry, CountChanged(t=1.0, count=2, previous=None, raw=2, t_media=1.0))
        page = await browser.new_page(viewport={"width": 390, "height": 844})
        refused = await page.goto(url)
        assert refused is not None and refused.status == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="lookout"'
        text = await page.text_content("body") or ""
        assert "needs its access token" in text, text
        assert "?token=<token>" in text and "Authorization: Bearer <token>" in text
        # A wrong token is said to be wrong; the right one, typed in the form, opens the page.
        await page.fill('input[name="token"]', "not-it")
        await page.click('button[type="submit"]')
        assert "was not accepted" in (await page.text_content("body") or "")
        assert "not-it" not in await page.content()
        await page.fill('input[name="token"]', token)
        await page.click('button[type="submit"]')
        await page.wait_for_function("() => document.getElementById('count')?.textContent === '2'")
        assert page.url == url  # the token left the address bar
        assert token not in await page.content()


# Each word of the tables (streams with their Stop buttons, lines, zones) and of the
# Start buttons, with the lines it is drawn on: a word on two lines was broken inside.
WORDS_ON_LINES = """() => {
  const lines = (range) => new Set([...range.getClientRects()].filter((r) => r.width > 0)
      .map((r) => Math.round(r.top))).size;
  const broken = [];
  const cells = document.querySelectorAll('table th, table td, #start-buttons button');
  for (const cell of cells) {
    if (!cell.getClientRects().length) continue;  // a column hidden on a phone
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        if (lines(range) > 1) broken.push(m[0]);
      }
    }
  }
  const buttons = [...document.querySelectorAll('#streams button, #start-buttons button')]
      .map((b) => { const r = document.createRange(); r.selectNodeContents(b); return lines(r); });
  const box = document.getElementById('streams').parentElement.getBoundingClientRect();
  const stops = [...document.querySelectorAll('button.stop')].map((b) => b.getBoundingClientRect());
  return {broken, buttons, rows: document.querySelectorAll('#streams tbody tr').length,
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          tableScrolls: document.getElementById('streams').scrollWidth > box.width + 1,
          stopsInView: stops.every((r) => r.left >= box.left && r.right <= box.right + 1)};
}"""
STREAMS = [
    {"id": "function-call-15873311942245781033", "name": "count_people", "by": "model"},
    {"id": "function-call-4410295568213307991", "name": "watch_zone", "by": "model"},
    {"id": "device-12", "name": "watch_zone", "by": "device"},
    {"id": "device-13", "name": "count_people", "by": "device"},
]

LONG_LINE = "entrance_by_the_north_door"
LONG_ZONE = "checkout_queue_beside_the_left_window"
SQUARE = "0.05,0.55,0.6,0.55,0.6,0.95,0.05,0.95"


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844), (360, 740)])
async def test_the_streams_table_never_breaks_a_word_at_any_width(
    chromium: Path, width: int, height: int
) -> None:
    # Long names, as people give them, in the lines and zones tables too.
    scene = {"lines": [f"{LONG_LINE}=0.5,0.9,0.5,0.1"], "zones": [f"{LONG_ZONE}={SQUARE}"]}
    app = FakeApp(config=Config.of(device_id="test-cam", model="local", **scene))
    assert app.session is not None
    for k, stream in enumerate(STREAMS):  # running for minutes, many emissions
        app.session.streams.append(stream | {"running_s": 754.0 + k * 61, "emissions": 1234})
    async with served(app) as (telemetry, url), chromium_browser(chromium) as browser:
        perceived(telemetry, CountChanged(t=1.0, count=4, previous=None, raw=4, t_media=1.0))
        page = await browser.new_page(viewport={"width": width, "height": height})
        await page.goto(url)
        await page.wait_for_function("() => document.querySelectorAll('button.stop').length === 4")
        seen: dict[str, Any] = await page.evaluate(WORDS_ON_LINES)
        assert seen["rows"] == len(STREAMS)
        assert LONG_ZONE in (await page.text_content("#zones") or "")
        assert seen["broken"] == [], f"words broken at {width} px: {seen['broken']}"
        assert seen["buttons"] and set(seen["buttons"]) == {1}, seen["buttons"]
        assert seen["overflow"] <= 0, f"the page scrolls sideways at {width} px"
        # Beside the image it fits; on a narrow screen it scrolls in its own box, with
        # every Stop in view (pinned) without scrolling.
        assert seen["stopsInView"], f"a Stop button out of view at {width} px"
        if width >= 1280:
            assert not seen["tableScrolls"], "the streams table does not fit at 1280 px"
