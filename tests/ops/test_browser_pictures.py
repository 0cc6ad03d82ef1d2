"""The latest events with their pictures on the status page, in a real headless Chromium.

The real app on the sample video with a line over the lamp post and ``--snapshots``:
the page lists the crossings with thumbnails that load (through the token's cookie) and
open the full picture; and, behind the real server with a fake app, a picture pruned
from the folder is said in words, never shown as a broken image.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from device.config import Config
from tests.ops.apprun import running_app
from tests.ops.support import FakeApp
from tests.ops.test_browser import browser_page, screenshot
from tests.ops.test_browser_page import chromium_browser, served
from tests.ops.test_pictures_route import a_picture

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
LINE = "post=0.5,0.9,0.5,0.1"  # people cross it within the first seconds of the video
THUMBNAILS_LOADED = """(n) => {
  const imgs = [...document.querySelectorAll('#pictures-list li img')];
  return imgs.length >= n && imgs.every((i) => i.complete && i.naturalWidth > 0);
}"""
READ_PICTURES = """() => ({
  hidden: document.getElementById('pictures').hidden,
  items: [...document.querySelectorAll('#pictures-list li')].map((li) => ({
    file: li.dataset.file,
    what: li.querySelector('.what').textContent,
    when: li.querySelector('.when').textContent,
    href: li.querySelector('a') ? li.querySelector('a').href : null,
    width: li.querySelector('img') ? li.querySelector('img').naturalWidth : null,
    gone: li.querySelector('.gone') ? li.querySelector('.gone').textContent : null,
  })),
})"""


async def test_the_page_lists_the_crossings_with_pictures_that_load_and_open(
    chromium: Path, tmp_path: Path
) -> None:
    token = "pictures-token-41c9"
    folder = tmp_path / "snaps"
    app = running_app(tmp_path, snapshots=folder, lines=[LINE], http_token=token)
    async with app as run, browser_page(chromium) as page:
        await page.goto(f"{run.url}?token={token}")  # then a cookie: <img> sends no header
        await page.wait_for_function(THUMBNAILS_LOADED, arg=1, timeout=30_000)
        shown: dict[str, Any] = await page.evaluate(READ_PICTURES)
        first = shown["items"][0]
        full = await page.request.get(first["href"])  # what a click opens
        assert full.status == 200 and full.headers["content-type"] == "image/jpeg"
        body = await full.body()
        await screenshot(page, tmp_path, "status-page-pictures.png")
        scraped = await (await page.request.get(run.url + "metrics")).text()
    assert not shown["hidden"]
    assert body == (folder / first["file"]).read_bytes()
    # Each listed picture is one the app wrote and named in a snapshot event, said as
    # its crossing was: the line, the direction, the person.
    snapshots = {e["file"]: e for e in run.events() if e["type"] == "snapshot"}
    crossings = {(e["t_media"], e["track"]): e for e in run.events() if e["type"] == "crossing"}
    for item in shown["items"]:
        event = snapshots[item["file"]]
        crossing = crossings[(event["t_media"], event["track"])]
        assert item["what"] == (
            f"crossing of line post ({crossing['direction']}) by track {crossing['track']}"
        )
        assert item["width"] > 0 and item["gone"] is None
        assert f"frame at {event['t_media']:.1f} s" in item["when"]
    values = {
        (sample.name, tuple(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
    }
    assert values[("lookout_snapshots_total", (("outcome", "written"),))] >= len(shown["items"])


async def test_a_pruned_picture_is_said_not_shown_broken(chromium: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    kept, _ = a_picture(folder, t=20.0, track=2)
    pruned, _ = a_picture(folder, t=10.0, track=1)
    (folder / pruned.file).unlink()  # the folder's cap took it after it was listed
    app = FakeApp(config=Config.of(device_id="cam", model="local", snapshots=folder))
    async with served(app) as (telemetry, url), chromium_browser(chromium) as browser:
        telemetry.write(pruned)
        telemetry.write(kept)
        page = await browser.new_page(viewport={"width": 390, "height": 844})
        await page.goto(url)
        await page.wait_for_function(THUMBNAILS_LOADED, arg=1)
        await page.wait_for_selector("#pictures-list .gone")
        shown: dict[str, Any] = await page.evaluate(READ_PICTURES)
        overflow = await page.evaluate("document.documentElement.scrollWidth - innerWidth")
    by_file = {item["file"]: item for item in shown["items"]}
    assert [item["file"] for item in shown["items"]] == [kept.file, pruned.file]
    assert by_file[kept.file]["width"] > 0
    gone = by_file[pruned.file]
    assert gone["gone"] == "picture no longer on the device" and gone["width"] is None
    assert gone["what"] == "crossing of line door (in) by track 1"  # the event stays listed
    assert overflow <= 0, "wider than a 390 px phone"


async def test_privacy_mode_shows_no_pictures_section(chromium: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    event, _ = a_picture(folder)
    config = Config.of(device_id="cam", model="local", snapshots=folder, privacy=True)
    page_of = served(FakeApp(config=config))
    async with page_of as (telemetry, url), chromium_browser(chromium) as browser:
        telemetry.write(event)
        page = await browser.new_page()
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        await page.goto(url, wait_until="load")
        await page.wait_for_function("() => document.getElementById('count') !== null")
        shown: dict[str, Any] = await page.evaluate(READ_PICTURES)
    assert shown == {"hidden": True, "items": []}
    assert not [u for u in requested if "/snapshots/" in u]
