"""Drawing lines and zones on the status page with the mouse, in a real headless Chromium.

The real app replays the sample video through the real detector; it starts with no line
and no zone, from a config file. An operator opens the page, presses "Edit lines and
zones", drags a line across the plaza and a rectangle over the lawn, names them and
saves: the device counts crossings on the line and people in the zone at once, the page's
table shows them, and the config file holds them. Then the zone is deleted and the line
renamed: the zone is gone from the page and the file, the line's totals carry over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, async_playwright

from device.config import build
from tests.ops.apprun import running_app
from tests.ops.support import CHROMIUM_ARGS
from tests.ops.test_browser import screenshot
from tests.ops.test_browser_scene import LINE_CROSSED, ZONE_COUNTED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
CONFIG = "# the plaza camera (this comment stays)\ndetect_fps = 5\n"


async def drag(page: Page, start: tuple[float, float], end: tuple[float, float]) -> None:
    """A mouse drag on the image, from and to fractions of its width and height."""
    box = await page.locator("#frame").bounding_box()
    assert box is not None
    x0, y0 = box["x"] + start[0] * box["width"], box["y"] + start[1] * box["height"]
    x1, y1 = box["x"] + end[0] * box["width"], box["y"] + end[1] * box["height"]
    await page.mouse.move(x0, y0)
    await page.mouse.down()
    await page.mouse.move(x1, y1, steps=8)
    await page.mouse.up()


async def name_row(page: Page, index: int, name: str) -> None:
    field = page.locator("#edit-items tbody tr").nth(index).locator("input.name")
    await field.fill(name)


async def save(page: Page) -> str:
    await page.click("#edit-save")
    await page.wait_for_function("() => document.getElementById('edit-panel').hidden")
    message: str = await page.locator("#edit-message").text_content() or ""
    return message


async def rows(page: Page, table: str) -> list[str]:
    names: list[str] = await page.evaluate(
        f"() => [...document.querySelectorAll('#{table} tbody tr')].map((r) => r.dataset.name)"
    )
    return names


async def test_an_operator_draws_a_line_and_a_zone_with_the_mouse_and_they_count(
    chromium: Path, tmp_path: Path
) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text(CONFIG)
    async with running_app(tmp_path, config_path=config) as run, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            await page.goto(run.url)
            await page.wait_for_function("() => !document.getElementById('frame').hidden")
            await page.wait_for_function("() => !document.getElementById('edit-scene').disabled")
            assert await page.locator("#scene").is_hidden()  # nothing to count on yet
            await page.click("#edit-scene")
            await page.click("#new-line")
            # Upwards through the middle of the plaza (A low, B high): in = walking right.
            await drag(page, (0.5, 0.9), (0.5, 0.1))
            await name_row(page, 0, "post")
            await page.click("#new-zone")
            await drag(page, (0.05, 0.55), (0.6, 0.95))
            await name_row(page, 1, "lawn")
            await page.locator("#edit-items tbody tr").nth(1).locator("input.dwell").fill("4")
            await screenshot(page, tmp_path, "scene-editor-drawn.png")
            said = await save(page)
            assert "line post added" in said and "zone lawn added" in said, said
            assert f"saved to {config}" in said
            await page.wait_for_function(ZONE_COUNTED, timeout=20_000)
            await page.wait_for_function(LINE_CROSSED, timeout=30_000)
            totals = await line_totals(page)
            await screenshot(page, tmp_path, "scene-editor-counting.png")

            saved = build({}, config_path=config, environ={}, system_config=tmp_path / "x.toml")
            (ax, ay), (bx, by) = saved.scene.lines["post"].points
            # Where the mouse went, within a pixel or two of the 768x576 frame.
            assert abs(ax - 0.5) < 0.005 and abs(ay - 0.9) < 0.005, (ax, ay)
            assert abs(bx - 0.5) < 0.005 and abs(by - 0.1) < 0.005, (bx, by)
            assert saved.scene.zones["lawn"].dwell == 4
            assert config.read_text().startswith(CONFIG)

            # Delete the zone, rename the line: the totals carry over.
            await page.click("#edit-scene")
            lawn = page.locator('#edit-items tbody tr[data-name="lawn"]')
            await lawn.locator("button.delete").click()
            await name_row(page, 0, "door")
            said = await save(page)
            assert "zone lawn removed" in said and "line post renamed to door" in said, said
            await page.wait_for_function(
                "() => document.querySelector('#lines tr[data-name=\"door\"]') !== null"
            )
            assert await rows(page, "zones") == []
            assert await page.locator("#zones").is_hidden()
            renamed = await line_totals(page, "door")
            assert renamed[0] + renamed[1] >= totals[0] + totals[1]
        finally:
            await browser.close()
    saved = build({}, config_path=config, environ={}, system_config=tmp_path / "x.toml")
    assert list(saved.scene.lines) == ["door"] and saved.scene.zones == {}
    events = run.events()
    crossings = [e for e in events if e["type"] == "crossing"]
    assert crossings and {e["line"] for e in crossings} <= {"post", "door"}
    zones = [e for e in events if e["type"] == "zone" and e["zone"] == "lawn"]
    assert zones  # the zone was counted from the frame after it was saved
    scenes = [e for e in events if e["type"] == "scene"]
    assert [s["revision"] for s in scenes] == [1, 2]


async def line_totals(page: Page, name: str = "post") -> tuple[int, int]:
    cells: dict[str, Any] = await page.evaluate(
        "(name) => Object.fromEntries([...document.querySelectorAll("
        '`#lines tr[data-name="${name}"] td`)].map((td) => [td.dataset.key, td.textContent]))',
        name,
    )
    return int(cells["in"]), int(cells["out"])


async def test_a_line_drawn_on_a_phone_can_be_moved_by_its_point_and_starts_afresh(
    chromium: Path, tmp_path: Path
) -> None:
    app = running_app(tmp_path, lines=["post=0.5,0.9,0.5,0.1"])
    async with app as run, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 390, "height": 844})
            await page.goto(run.url)
            await page.wait_for_function("() => !document.getElementById('edit-scene').disabled")
            await page.click("#edit-scene")
            # Select the line by its body, then drag its A point to the left edge.
            await drag(page, (0.5, 0.5), (0.5, 0.5))
            handle = page.locator("#editor circle.handle").first
            await handle.wait_for()
            await drag(page, (0.5, 0.9), (0.1, 0.9))
            said = await save(page)
            assert "line post moved: its totals start again at 0" in said, said
            assert "not saved" in said  # started without a config file
            toml = page.locator("#edit-toml")
            assert await toml.is_visible()
            text = await toml.input_value()
            assert "[lines.post]" in text and "0.1" in text
            overflow: int = await page.evaluate(
                "() => document.documentElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 0, "the editor is wider than a 390 px phone"
        finally:
            await browser.close()
    scene = [e for e in run.events() if e["type"] == "scene"][-1]
    (ax, ay), _ = scene["lines"]["post"]
    assert abs(ax - 0.1) < 0.01 and abs(ay - 0.9) < 0.01
