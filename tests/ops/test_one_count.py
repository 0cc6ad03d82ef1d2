"""One number everywhere: the page's big count, the count over its image, /api/state,
/metrics and MQTT say the same count at the same moment.

The real app (a fake live camera serving real vtest frames, the real detector and
tracker, the local model, a real Mosquitto, the page in a real Chromium). The camera
shows one still scene after another (frames with different numbers of people); whenever
the page is read, its two numbers agree, and once each scene has settled every output
says the same count, a different one for each scene.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import cv2
import numpy as np
import pytest
from playwright.async_api import Page

from tests.cameras import VtestCamera
from tests.datafiles import data_file
from tests.ops.apprun import running_app
from tests.ops.support import Broker, Subscriber
from tests.ops.test_browser import IMAGE_SHOWN, browser_page

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DEVICE = "browser-test"
# Frames of the sample video with 3, 6 and 8 people in view (tests/data/vtest_people.json).
STILLS = (0, 300, 750)
READ_PAGE = """() => {
  const banner = document.getElementById('frame-banner');
  return [document.getElementById('count').textContent, banner.dataset.count || '',
          banner.textContent, banner.hidden];
}"""


def frames_at(indices: tuple[int, ...]) -> dict[int, np.ndarray]:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    found: dict[int, np.ndarray] = {}
    index = 0
    try:
        while len(found) < len(indices):
            ok, image = cap.read()
            assert ok, f"vtest.avi ended before frame {max(indices)}"
            if index in indices:
                found[index] = image
            index += 1
    finally:
        cap.release()
    return found


async def page_count(page: Page) -> int | None:
    """The page's big number, after checking the count over the image says the same."""
    card, banner, banner_text, hidden = await page.evaluate(READ_PAGE)
    assert not hidden
    if card == "–":
        assert banner == "" and banner_text == "count unknown"
        return None
    assert banner == card, (card, banner_text)  # read in one go: the same moment
    assert banner_text.startswith(f"{card} ")
    return int(card)


async def api_count(page: Page, url: str) -> int | None:
    state = await (await page.request.get(url + "api/state")).json()
    count = state["count"]
    return None if count is None else int(count)


async def metrics_count(page: Page, url: str) -> int | None:
    text = await (await page.request.get(url + "metrics")).text()
    for line in text.splitlines():
        if line.startswith('lookout_people{camera="main"} '):
            return round(float(line.split()[1]))
    return None  # absent while unknown


def mqtt_count(watch: Subscriber) -> int | None:
    said = watch.on(f"lookout/{DEVICE}/count")
    if not said or not said[-1].payload:
        return None
    count = json.loads(said[-1].payload)["count"]  # null while unknown
    return None if count is None else int(count)


async def test_the_page_its_image_the_api_metrics_and_mqtt_say_one_count(
    broker: Broker, chromium: Path, tmp_path: Path
) -> None:
    stills = frames_at(STILLS)
    camera = VtestCamera([stills[STILLS[0]]])
    watch = Subscriber(broker.port, [f"lookout/{DEVICE}/count"])
    settled: list[int] = []
    reads = 0
    flags = {"detect_fps": 5.0, "mqtt": broker.url}
    async with (
        running_app(tmp_path, source=camera, **flags) as run,
        browser_page(chromium) as page,
    ):
        await page.goto(run.url)
        await page.wait_for_function(IMAGE_SHOWN, timeout=20_000)
        for index in STILLS:
            with camera.lock:
                camera.frames = [stills[index]]
            deadline = time.monotonic() + 20
            agreed_since: float | None = None
            while True:
                shown = await page_count(page)
                reads += 1
                said = {
                    "page": shown,
                    "api": await api_count(page, run.url),
                    "metrics": await metrics_count(page, run.url),
                    "mqtt": mqtt_count(watch),
                }
                one = set(said.values())
                if len(one) == 1 and shown is not None and (not settled or shown != settled[-1]):
                    agreed_since = agreed_since or time.monotonic()
                    if time.monotonic() - agreed_since >= 1.0:
                        settled.append(shown)
                        break
                else:
                    agreed_since = None
                assert time.monotonic() < deadline, f"frame {index}: never one count: {said}"
                await anyio.sleep(0.1)
    watch.close()
    # Each still scene settled on its own count, said the same by every output.
    assert len(settled) == len(STILLS) and len(set(settled)) == len(STILLS), settled
    assert reads >= len(STILLS) * 10
