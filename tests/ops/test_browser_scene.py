"""Lines and zones on the status page, in a real headless Chromium, fed by the real app.

The sample video through the real detector, tracker and scene: the page's
"Lines and zones" table must show the same totals and zone counts as the
app's own events, drawn on the frame too, greyed and unknown while the
camera is gone, and fit a phone. Chromium as in ``test_browser.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from playwright.async_api import Page, async_playwright
from prometheus_client.parser import text_string_to_metric_families

from device.outputs.page.render import LINE_COLOR
from tests.cameras import VtestCamera, vtest_frames
from tests.ops.apprun import running_app
from tests.ops.support import CHROMIUM_ARGS
from tests.ops.test_browser import screenshot

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
# A vertical post in the middle of the plaza, drawn upwards (in = walking to the right),
# and a zone over the lawn in the lower left; people cross the one and walk the other.
LINE = "post=0.5,0.9,0.5,0.1"
ZONE = "lawn=0.05,0.55,0.6,0.55,0.6,0.95,0.05,0.95"

LINE_CROSSED = (
    "() => { const r = document.querySelector('#lines tr[data-name=\"post\"]');"
    ' if (!r) return false; const n = (k) => Number(r.querySelector(`[data-key="${k}"]`)'
    ".textContent); return n('in') + n('out') > 0; }"
)
ZONE_COUNTED = (
    '() => { const c = document.querySelector(\'#zones tr[data-name="lawn"] [data-key="people"]\');'
    " return c !== null && /^\\d+$/.test(c.textContent); }"
)
ZONE_UNKNOWN = (
    "() => { const r = document.querySelector('#zones tr[data-name=\"lawn\"]');"
    " return r !== null && r.querySelector('[data-key=\"people\"]').textContent === '–'; }"
)
READ_SCENE = """() => {
  const cells = (sel) => Object.fromEntries([...document.querySelectorAll(sel + ' td')]
      .map((td) => [td.dataset.key, td.textContent]));
  const row = (sel) => document.querySelector(sel);
  return {
    line: cells('#lines tr[data-name="post"]'),
    lineGrey: row('#lines tr[data-name="post"]').classList.contains('unknown'),
    zone: cells('#zones tr[data-name="lawn"]'),
    zoneGrey: row('#zones tr[data-name="lawn"]').classList.contains('unknown'),
    detail: document.getElementById('scene-detail').textContent,
    text: document.getElementById('scene').textContent,
  };
}"""


async def read_scene(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate(READ_SCENE)
    return result


async def overflow(page: Page) -> int:
    result: int = await page.evaluate(
        "() => document.documentElement.scrollWidth - window.innerWidth"
    )
    return result


async def test_a_phone_shows_the_lines_totals_and_the_zones_count_from_the_video(
    chromium: Path, tmp_path: Path
) -> None:
    scene = running_app(tmp_path, lines=[LINE], zones=[ZONE])
    async with scene as run, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 390, "height": 844})
            await page.goto(run.url)
            await page.wait_for_function(ZONE_COUNTED, timeout=20_000)
            # People cross the post within the first seconds of the video (6 s at most
            # with this detector); the page shows it without a reload.
            await page.wait_for_function(LINE_CROSSED, timeout=30_000)
            shown = await read_scene(page)
            assert await overflow(page) <= 0, "wider than a 390 px phone"
            await screenshot(page, tmp_path, "status-page-scene-phone.png")
            snapshot = await page.request.get(run.url + "snapshot.jpg")
            assert snapshot.status == 200
            drawn = cv2.imdecode(np.frombuffer(await snapshot.body(), np.uint8), cv2.IMREAD_COLOR)
            assert drawn is not None
            scraped = await (await page.request.get(run.url + "metrics")).text()
            for width in (360, 320):
                await page.set_viewport_size({"width": width, "height": 844})
                assert await overflow(page) <= 0, f"wider than {width} px"
        finally:
            await browser.close()
    events = run.events()
    # The page's totals are ones the app counted (the same numbers, not its own).
    totals = {(e["total_in"], e["total_out"]) for e in events if e["type"] == "crossing"}
    line = shown["line"]
    assert (int(line["in"]), int(line["out"])) in totals, (line, totals)
    assert line["name"] == "post" and not shown["lineGrey"]
    zone_counts = {e["people"] for e in events if e["type"] == "zone" and e["zone"] == "lawn"}
    assert int(shown["zone"]["people"]) in zone_counts, (shown["zone"], zone_counts)
    assert shown["zone"]["dwelling"].isdigit() and shown["zone"]["longest"].endswith(" s")
    assert "Lines and zones" in shown["text"] and not shown["zoneGrey"]
    assert "in: to the right of A→B" in shown["detail"]
    # /metrics of the real app: the crossings so far, the zone, the tracker's own counts.
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
    }
    main = ("camera", "main")  # a camera's series are labelled with it
    scraped_in = values[
        ("lookout_line_crossings_total", (main, ("direction", "in"), ("line", "post")))
    ]
    assert scraped_in >= int(line["in"])  # scraped after the page was read
    assert ("lookout_zone_people", (main, ("zone", "lawn"))) in values
    assert values[("lookout_tracks_confirmed_total", (main,))] >= 1
    assert values[("lookout_track_seconds_mean", (main,))] > 0
    # The line is drawn on the frame: the post's column is mostly its colour.
    height, width = drawn.shape[:2]
    column = drawn[int(0.15 * height) : int(0.85 * height), width // 2].astype(int)
    on_line = np.all(np.abs(column - np.array(LINE_COLOR)) < 60, axis=1)
    assert on_line.mean() > 0.5, on_line.mean()


async def test_zones_go_unknown_and_lines_stop_counting_while_the_camera_is_gone(
    chromium: Path, tmp_path: Path
) -> None:
    camera = VtestCamera(vtest_frames(60))
    scene = running_app(tmp_path, source=camera, detect_fps=10.0, lines=[LINE], zones=[ZONE])
    async with scene as run, async_playwright() as pw:
        run.app.source_runner.initial_backoff_s = 0.2
        run.app.source_runner.max_backoff_s = 0.5
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 390, "height": 844})
            await page.goto(run.url)
            await page.wait_for_function(ZONE_COUNTED, timeout=20_000)
            counting = await read_scene(page)
            assert not counting["zoneGrey"] and not counting["lineGrey"]
            camera.unplugged = True
            await page.wait_for_function(ZONE_UNKNOWN, timeout=10_000)
            gone = await read_scene(page)
            assert await overflow(page) <= 0, "wider than a 390 px phone"
            await screenshot(page, tmp_path, "status-page-scene-camera-gone.png")
            camera.unplugged = False
            await page.wait_for_function(ZONE_COUNTED, timeout=20_000)
            back = await read_scene(page)
        finally:
            await browser.close()
    # Unknown is shown as unknown, as the count is: dashes, greyed, and why.
    assert gone["zone"] | {"name": ""} == {"name": "", "people": "–", "dwelling": "–",
                                           "longest": "–"}  # fmt: skip
    assert gone["zoneGrey"] and gone["lineGrey"]
    assert gone["detail"].startswith("Not counting (camera reconnecting since "), gone["detail"]
    assert "line totals are those so far" in gone["detail"]
    # The line's totals stay on show (they are the run's), no number is made up.
    crossings = [e for e in run.events() if e["type"] == "crossing"]
    assert gone["line"]["in"].isdigit() and gone["line"]["out"].isdigit()
    assert int(gone["line"]["in"]) <= sum(e["direction"] == "in" for e in crossings)
    assert not back["zoneGrey"] and not back["lineGrey"]
    assert int(back["line"]["in"]) >= int(gone["line"]["in"])
