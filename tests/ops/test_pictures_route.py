"""The event pictures on the status page's side: ``GET /snapshots/<file>`` and the state's list.

The real status server on loopback, a fake app whose configuration names a real folder
of real JPEGs, and the ``snapshot`` events the snapshots output publishes once a
picture is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import aiohttp
import cv2
import numpy as np
import pytest

from device.config import Config
from device.events import RunStarted, SnapshotSaved
from device.outputs.pictures.snapshots import file_name
from tests.ops.support import FakeApp
from tests.ops.test_status_server import serving

pytestmark = pytest.mark.anyio


def a_picture(folder: Path, t: float = 12.5, track: int = 4) -> tuple[SnapshotSaved, bytes]:
    """A written picture (a real JPEG in ``folder``) and the event that names it."""
    folder.mkdir(exist_ok=True)
    name = file_name("0123456789ab", t, "crossing", "door", track)
    image = np.full((120, 160, 3), 90, np.uint8)
    ok, jpeg = cv2.imencode(".jpg", image)
    assert ok
    (folder / name).write_bytes(jpeg.tobytes())
    event = SnapshotSaved(
        t=t, file=name, of="crossing", name="door", track=track, t_media=t, direction="in"
    )
    return event, jpeg.tobytes()


def run_of(*, live: bool) -> RunStarted:
    return RunStarted(
        run_id="0123456789ab",
        started="2026-12-02T10:00:00+0000",
        started_wall=1_796_000_000.0,
        source="plaza.mp4",
        live=live,
        model="local",
    )


def app_with(folder: Path | None, **settings: object) -> FakeApp:
    return FakeApp(config=Config.of(device_id="cam", model="local", snapshots=folder, **settings))


async def test_a_written_picture_is_listed_and_served_by_its_name(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    older, _ = a_picture(folder, t=3.0, track=1)
    event, jpeg = a_picture(folder)
    async with serving(app_with(folder)) as (_, tel, base), aiohttp.ClientSession() as http:
        tel.write(run_of(live=False))  # a recording
        tel.write(older)
        tel.write(event)
        async with http.get(base + "/api/state") as response:
            pictures = (await response.json())["pictures"]
        assert pictures["on"] is True
        newest = pictures["latest"][0]  # newest first
        assert [p["file"] for p in pictures["latest"]] == [event.file, older.file]
        assert newest["caption"] == "crossing of line door (in) by track 4"
        assert newest["url"] == f"snapshots/{event.file}"
        assert newest["t_media"] == 12.5  # where the frame is in the recording
        async with http.get(f"{base}/{newest['url']}") as picture:
            assert picture.status == 200
            assert picture.headers["Content-Type"] == "image/jpeg"
            assert await picture.read() == jpeg


async def test_only_a_pictures_name_is_served_never_a_path(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    event, _ = a_picture(folder)
    (tmp_path / "events.jsonl").write_text('{"secret": 1}\n')
    secret = tmp_path / "private.jpg"
    secret.write_bytes(b"\xff\xd8 not for the page")
    # A link in the folder named like a picture, to a file outside it: never followed.
    planted = file_name("0123456789ab", 99.0, "crossing", "door", 9)
    os.symlink(secret, folder / planted)
    names = [
        "..%2Fevents.jsonl",
        "%2E%2E%2Fprivate.jpg",
        "holiday.jpg",  # a file name, but not one Lookout gives
        f"{event.file}%0A",  # a valid name and a newline
        planted,
        file_name("0123456789ab", 50.0, "crossing", "door", 2),  # never written (or pruned)
    ]
    async with serving(app_with(folder)) as (_, _, base), aiohttp.ClientSession() as http:
        for name in names:
            async with http.get(f"{base}/snapshots/{name}") as response:
                assert response.status == 404, name
                assert b"secret" not in await response.read()
        (folder / event.file).unlink()  # pruned by the folder's cap
        async with http.get(f"{base}/snapshots/{event.file}") as gone:
            assert gone.status == 404


async def test_the_pictures_need_the_token(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    event, jpeg = a_picture(folder)
    token = "tok-pictures-7d1e"
    guarded = serving(app_with(folder), token=token)
    async with guarded as (_, _, base), aiohttp.ClientSession() as http:
        async with http.get(f"{base}/snapshots/{event.file}") as refused:
            assert refused.status == 401
        bearer = {"Authorization": f"Bearer {token}"}
        async with http.get(f"{base}/snapshots/{event.file}", headers=bearer) as allowed:
            assert allowed.status == 200 and await allowed.read() == jpeg


async def test_privacy_mode_lists_and_serves_no_picture(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    event, _ = a_picture(folder)  # left by an earlier run without privacy
    private = app_with(folder, privacy=True)
    async with serving(private) as (_, tel, base), aiohttp.ClientSession() as http:
        tel.write(event)
        assert tel.state()["pictures"] == {"on": False, "latest": []}
        async with http.get(f"{base}/snapshots/{event.file}") as response:
            assert response.status == 404


async def test_without_snapshots_there_is_no_picture_route(tmp_path: Path) -> None:
    event, _ = a_picture(tmp_path / "pics")
    async with serving(app_with(None)) as (_, tel, base), aiohttp.ClientSession() as http:
        assert tel.state()["pictures"]["on"] is False
        async with http.get(f"{base}/snapshots/{event.file}") as response:
            assert response.status == 404


def test_a_cameras_pictures_say_no_media_time(tmp_path: Path) -> None:
    """A camera's frame times are its clock's, not a place in a recording: not shown."""
    from device.outputs.telemetry import Telemetry

    event, _ = a_picture(tmp_path / "pics")
    tel = Telemetry(app_with(tmp_path / "pics"))
    tel.write(run_of(live=True))
    tel.write(event)
    (shown,) = tel.state()["pictures"]["latest"]
    assert shown["t_media"] is None and shown["time"]
