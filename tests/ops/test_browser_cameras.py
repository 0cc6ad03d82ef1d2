"""The status page of a device with two cameras, in a real headless Chromium.

The real app runs ``--source door=... --source till=...``: door replays the sample video
(people walking), till an empty plaza (the sample video without its people: nobody, ever).
An operator sees a tab per camera with its count, switches between them (each shows its
own count and its own live image), draws a line on till and saves it: it goes to till
alone (its table of the config file, its scene on the page), never to door.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

from device.config import build
from device.events import CountChanged
from tests.datafiles import data_file
from tests.ops.apprun import running_app
from tests.ops.support import CHROMIUM_ARGS, perceived, two_cameras
from tests.ops.test_browser import screenshot
from tests.ops.test_browser_page import chromium_browser, served
from tests.ops.test_browser_scene_edit import drag, name_row, save
from tests.percepts import make_percept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
CONFIG = "# the shop (this comment stays)\n"
COUNTING = (
    "(camera) => { const t = document.querySelector(`#cameras button[data-camera=${camera}]"
    " .tab-count`); return t !== null && /^\\d+$/.test(t.textContent); }"
)
SHOWS = (
    "(camera) => { const i = document.getElementById('frame');"
    " return !i.hidden && i.src.includes(`camera=${camera}`) && i.complete"
    " && i.naturalWidth > 0; }"
)


def empty_plaza_clip(path: Path, seconds: float = 20.0) -> Path:
    from tests.device.test_motion import empty_plaza, write_video

    return write_video(path, empty_plaza(), seconds)


async def switch(page: Page, camera: str) -> None:
    await page.click(f"#cameras button[data-camera={camera}]")
    await page.wait_for_function(SHOWS, arg=camera, timeout=15_000)


async def test_an_operator_switches_cameras_and_draws_a_line_on_the_second(
    chromium: Path, tmp_path: Path
) -> None:
    video = str(data_file("vtest.avi"))
    plaza = empty_plaza_clip(tmp_path / "plaza.avi")
    config = tmp_path / "lookout.toml"
    config.write_text(CONFIG)
    sources = [f"door={video}", f"till={plaza}"]
    app = running_app(tmp_path, config_path=config, sources=sources, loop=True)
    async with app as run, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            refused: list[str] = []  # what the page asked for and did not get
            page.on("response", lambda r: refused.append(r.url) if r.status >= 400 else None)
            await page.goto(run.url)
            tabs = page.locator("#cameras button")
            assert [await t.get_attribute("data-camera") for t in await tabs.all()] == [
                "door",
                "till",
            ]
            for camera in ("door", "till"):
                await page.wait_for_function(COUNTING, arg=camera, timeout=20_000)
            # The first camera is shown first: its image, its count (people walk there).
            await page.wait_for_function(SHOWS, arg="door", timeout=15_000)
            assert await page.get_attribute("#cameras [data-camera=door]", "aria-pressed") == "true"
            await page.wait_for_function(
                "() => /^[1-9]\\d*$/.test(document.getElementById('count').textContent)",
                timeout=20_000,
            )
            door_source = await page.text_content("#source-name") or ""
            assert door_source.startswith("door: ") and "vtest.avi" in door_source
            await screenshot(page, tmp_path, "cameras-door.png")
            # Till: nobody in its plaza, its own image and source.
            await switch(page, "till")
            await page.wait_for_function(
                "() => document.getElementById('count').textContent === '0'", timeout=10_000
            )
            assert "plaza.avi" in (await page.text_content("#source-name") or "")
            assert await page.get_attribute("#snapshot-link", "href") == "snapshot.jpg?camera=till"
            assert await page.locator("#scene").is_hidden()  # no line anywhere yet
            # A line drawn on till, saved to till.
            await page.wait_for_function("() => !document.getElementById('edit-scene').disabled")
            await page.click("#edit-scene")
            assert await page.is_disabled("#cameras [data-camera=door]")  # not mid-edit
            await page.click("#new-line")
            await drag(page, (0.5, 0.9), (0.5, 0.1))
            await name_row(page, 0, "post")
            said = await save(page)
            assert said.startswith("till: line post added") and f"saved to {config}" in said, said
            await page.wait_for_function(
                "() => document.querySelector('#lines tr[data-name=\"post\"]') !== null"
            )
            await screenshot(page, tmp_path, "cameras-till-line.png")
            # Door has no line: its page shows none.
            await switch(page, "door")
            await page.wait_for_function("() => document.getElementById('scene').hidden")
            assert await page.locator("#lines tbody tr").count() == 0
            # A phone: the tabs wrap, nothing sticks out.
            await page.set_viewport_size({"width": 390, "height": 844})
            overflow: int = await page.evaluate(
                "() => document.documentElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 0, "the page is wider than a 390 px phone"
            await screenshot(page, tmp_path, "cameras-phone.png")
            assert refused == []  # the favicon too: the page names its own
        finally:
            await browser.close()
    scenes = [e for e in run.events() if e["type"] == "scene"]
    assert [(s["camera"], list(s["lines"])) for s in scenes] == [("till", ["post"])]
    again = build(
        {"source": sources}, config_path=config, environ={}, system_config=tmp_path / "x.toml"
    )
    assert list(again.camera("till").scene.lines) == ["post"]
    assert again.camera("door").scene.lines == {}
    assert (
        config.read_text().startswith(CONFIG) and "[cameras.till.lines.post]" in config.read_text()
    )


async def test_a_camera_the_detector_cannot_keep_up_with_says_so_and_a_private_one_shows_none(
    chromium: Path,
) -> None:
    app = two_cameras(till={"privacy": True})
    till = app.camera_list[1]
    till.achieved_fps, till.detect_fps, till.behind = 3.1, 5.0, True
    async with served(app) as (telemetry, url), chromium_browser(chromium) as browser:
        for camera, n in (("door", 2), ("till", 1)):
            telemetry.on_percept(
                dataclasses.replace(make_percept([[9, 9, 40, 80]] * n), camera=camera)
            )
            perceived(telemetry, CountChanged(t=1.0, count=n, previous=None, raw=n, t_media=1.0,
                                         camera=camera))  # fmt: skip
        page = await browser.new_page(viewport={"width": 390, "height": 844})
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        await page.goto(url)
        await page.wait_for_function(SHOWS, arg="door", timeout=10_000)
        assert (await page.text_content("#perception-detail") or "").startswith("detector ")
        assert await page.get_attribute("#cameras [data-camera=till] .dot", "class") == "dot warn"
        await page.click("#cameras button[data-camera=till]")
        await page.wait_for_function(
            "() => document.getElementById('count').textContent === '1'", timeout=5_000
        )
        detail = page.locator("#perception-detail")
        assert (await detail.text_content() or "").startswith(
            "the detector keeps up with 3.1 of 5 detections a second · "
        )
        assert "behind" in (await detail.get_attribute("class") or "")
        assert await page.is_hidden("#frame")
        assert (
            await page.text_content("#no-image")
            == "Privacy mode: no image of till leaves the device."
        )
        assert await page.is_hidden("#snapshot-link")
    assert not [u for u in asked if "camera=till" in u]  # not one image of till asked for
