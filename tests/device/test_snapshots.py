"""``--snapshots DIR``: one JPEG per crossing (dwell, quiet count change), named in the events.

The real command on the sample video with its lamp-post line, and the output driven
directly for what a run cannot stage on cue (its folder replaced by a file mid-run,
which event a frame's picture belongs to).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from device.events import CountChanged, LineCrossed, SnapshotSaved
from device.outputs.page.render import BOX_COLOR, SceneGeometry
from device.outputs.pictures.snapshots import Snapshots
from live.events import ErrorEvent, Event
from tests.cli import lookout
from tests.datafiles import data_file
from tests.detection_cache import remembered
from tests.percepts import make_percept

POST = "post=0.5599,0.7292,0.5599,0.2083"
SECONDS = "20"  # of the sample video: 7 crossings of the post


def run(tmp_path: Path, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    events = tmp_path / "events.jsonl"
    done = lookout(
        "run", "--pace", "fast", "--source", str(data_file("vtest.avi")), "--model", "local",
        "--http", "", "--duration", SECONDS, "--line", POST, "--events", str(events), *extra,
    )  # fmt: skip
    logged = (
        [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
    )
    return done, logged


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


@pytest.fixture(scope="module")
def snapshot_run(
    tmp_path_factory: pytest.TempPathFactory, detections_folder: Path
) -> tuple[Path, Any, list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("snapshots")
    folder = tmp / "pics" / "deeper"  # missing: created
    with remembered(detections_folder):
        done, events = run(tmp, "--snapshots", str(folder))
    return folder, done, events


def test_each_crossing_has_one_decodable_jpeg_with_its_boxes_named_in_its_event(
    snapshot_run: tuple[Path, Any, list[dict[str, Any]]],
) -> None:
    import cv2

    folder, done, events = snapshot_run
    assert done.returncode == 0, done.stdout + done.stderr
    crossings = of_type(events, "crossing")
    snapshots = [e for e in of_type(events, "snapshot") if e["of"] == "crossing"]
    files = sorted(p.name for p in folder.glob("*.jpg"))
    assert len(crossings) >= 3
    assert len(snapshots) == len(crossings) == len(files)
    assert sorted(s["file"] for s in snapshots) == files
    # Each crossing has its picture: same line, person and frame time.
    assert sorted((c["line"], c["track"], c["t_media"]) for c in crossings) == sorted(
        (s["name"], s["track"], s["t_media"]) for s in snapshots
    )
    for name in files:
        image = cv2.imread(str(folder / name))
        assert image is not None and image.shape[0] > 100, name
        # The boxes are drawn: pixels of the person colour (JPEG: near it).
        near = np.abs(image.astype(int) - np.array(BOX_COLOR)).max(axis=2) <= 30
        assert near.sum() > 50, name
    assert not list(folder.glob("*.part"))


@pytest.mark.usefixtures("remembered_detections")
def test_a_tiny_cap_keeps_the_folder_under_it_newest_first_and_old_pictures_go_at_start(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pics"
    folder.mkdir()
    old = folder / "0123456789ab-000001.00-crossing-post-1.jpg"
    old.write_bytes(b"x" * 10)
    week_ago = time.time() - 8 * 86_400
    os.utime(old, (week_ago, week_ago))
    mine_not = folder / "holiday.jpg"  # not one of Lookout's: never deleted
    mine_not.write_bytes(b"y" * 10)
    done, events = run(tmp_path, "--snapshots", str(folder), "--snapshots-max-mb", "0.2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not old.exists()  # older than --snapshots-days (7)
    assert mine_not.exists()
    kept = sorted(folder.glob("*-crossing-*.jpg"))
    snapshots = of_type(events, "snapshot")
    assert len(snapshots) > len(kept) >= 1
    assert sum(p.stat().st_size for p in kept) <= 200_000
    assert kept[-1].name == max(s["file"] for s in snapshots)  # the newest stays


@pytest.mark.usefixtures("remembered_detections")
def test_privacy_writes_none_and_says_so_once(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    done, events = run(tmp_path, "--snapshots", str(folder), "--privacy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not folder.exists() or not list(folder.iterdir())
    assert not of_type(events, "snapshot")
    assert of_type(events, "crossing")
    assert done.stdout.count("no snapshots are written") == 1


@pytest.mark.usefixtures("remembered_detections")
def test_an_unwritable_folder_is_said_once_and_counting_goes_on(
    tmp_path: Path, snapshot_run: tuple[Path, Any, list[dict[str, Any]]]
) -> None:
    # /proc takes no new file, even from root (chmod would not stop root).
    done, events = run(tmp_path, "--snapshots", "/proc")
    assert done.returncode == 0, done.stdout + done.stderr
    errors = [e for e in of_type(events, "error") if e.get("where") == "snapshots"]
    assert len(errors) == 1, errors
    assert "cannot write in /proc" in errors[0]["message"]
    # The crossings are those of the run that could write.
    _, _, written = snapshot_run
    assert len(of_type(events, "crossing")) == len(of_type(written, "crossing"))


def test_a_snapshots_path_that_is_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_text("")
    done = lookout(
        "run", "--source", str(data_file("vtest.avi")), "--model", "local", "--http", "",
        "--snapshots", str(path),
    )  # fmt: skip
    assert done.returncode == 2
    assert f"--snapshots {path}: is a file, not a folder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------- the output itself


class Collected:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def snapshots(folder: Path, publish: Callable[[Event], None], **kw: Any) -> Snapshots:
    settings: dict[str, Any] = dict(
        run_id="0123456789ab", publish=publish, geometry=SceneGeometry(),
        max_bytes=10_000_000, max_age_s=86_400.0, quiet_s=10.0,
        close_wait_s=30.0,  # what was queued is written, however busy the machine
    )  # fmt: skip
    settings.update(kw)
    return Snapshots(folder, **settings)


def crossing(t: float, track: int = 1) -> LineCrossed:
    return LineCrossed(line="door", direction="in", track=track, t_media=t, total_in=1, total_out=0)


def test_the_picture_is_of_the_frame_the_event_belongs_to(tmp_path: Path) -> None:
    import cv2

    publish = Collected()
    out = snapshots(tmp_path, publish)
    out.on_percept(make_percept([[10, 10, 50, 90]], t=1.0, seq=1))
    out.write(crossing(2.0))  # perception says the event before its frame's percept
    assert not publish.of(SnapshotSaved)
    white = np.full((100, 200, 3), 255, np.uint8)
    out.on_percept(make_percept([[100, 10, 150, 90]], t=2.0, seq=2, image=white))
    out.close()
    (saved,) = publish.of(SnapshotSaved)
    assert (saved.of, saved.name, saved.track, saved.t_media, saved.frame) == (
        "crossing", "door", 1, 2.0, 2,
    )  # fmt: skip
    image = cv2.imread(str(tmp_path / saved.file))
    assert image is not None
    assert image[5, 5].min() > 200  # the white frame of t=2, not the black one of t=1
    assert out.written == 1


def test_a_count_change_is_a_picture_only_after_a_quiet_spell(tmp_path: Path) -> None:
    publish = Collected()
    out = snapshots(tmp_path, publish, quiet_s=10.0)
    times = [(0.0, 1, None), (3.0, 2, 1), (20.0, 3, 2), (21.0, 2, 3)]
    for t, count, previous in times:
        out.write(CountChanged(count=count, previous=previous, t_media=t, frame=int(t)))
        out.on_percept(make_percept([[10, 10, 50, 90]] * count, t=t, seq=int(t)))
    out.close()
    assert [s.t_media for s in publish.of(SnapshotSaved)] == [20.0]  # 17 s after 3.0


def test_a_folder_replaced_by_a_file_mid_run_is_said_once_and_the_rest_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pics"
    folder.mkdir()
    publish = Collected()
    out = snapshots(folder, publish)
    out.write(crossing(1.0))
    out.on_percept(make_percept([[10, 10, 50, 90]], t=1.0, seq=1))
    deadline = time.monotonic() + 5
    while out.written < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert out.written == 1
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.write_text("not a folder any more")
    for i in range(2, 6):
        out.write(crossing(float(i), track=i))
        out.on_percept(make_percept([[10, 10, 50, 90]], t=float(i), seq=i))
        time.sleep(0.05)
    out.close()
    out.on_percept(make_percept(t=9.0, seq=9))  # the next thing on the loop says it
    errors = [e for e in publish.of(ErrorEvent) if e.where == "snapshots"]
    assert len(errors) == 1
    assert "cannot write in" in errors[0].message and "said once" in errors[0].message
    # Only the picture that was written is named in a snapshot event: none links to nothing.
    assert out.failed == 4 and len(publish.of(SnapshotSaved)) == 1


@pytest.mark.anyio
async def test_a_snapshot_event_comes_on_the_loop_once_its_file_is_on_disk(
    tmp_path: Path,
) -> None:
    """What the page, MQTT and the report link to is there when they hear of it."""
    import anyio

    seen: list[tuple[SnapshotSaved, bool]] = []
    arrived = anyio.Event()

    def publish(event: Event) -> None:
        if isinstance(event, SnapshotSaved):
            seen.append((event, (tmp_path / event.file).is_file()))
            arrived.set()

    out = snapshots(tmp_path, publish)
    out.write(crossing(2.0))
    out.on_percept(make_percept([[10, 10, 50, 90]], t=2.0, seq=2))
    assert not seen  # queued, not yet written: not said yet
    with anyio.fail_after(5):
        await arrived.wait()  # the worker wakes the loop: no next event or percept needed
    ((saved, on_disk),) = seen
    assert on_disk
    assert (saved.of, saved.name, saved.track, saved.direction) == ("crossing", "door", 1, "in")
    assert out.counts() == {"written": 1, "dropped": 0, "failed": 0, "pruned": 0}
    out.close()
    assert len(seen) == 1  # said once, not again at the end


def test_a_count_change_picture_says_the_new_count(tmp_path: Path) -> None:
    publish = Collected()
    out = snapshots(tmp_path, publish, quiet_s=1.0)
    for t, count, previous in [(0.0, 1, None), (5.0, 3, 1)]:
        out.write(CountChanged(count=count, previous=previous, t_media=t, frame=int(t)))
        out.on_percept(make_percept([[10, 10, 50, 90]] * count, t=t, seq=int(t)))
    out.close()
    (saved,) = publish.of(SnapshotSaved)
    assert (saved.of, saved.count, saved.track) == ("count", 3, None)


def test_the_pictures_written_at_the_end_still_reach_the_log(tmp_path: Path) -> None:
    """The bus closes the snapshots first: what their close publishes is logged."""
    from device.bus import EventBus
    from device.outputs.sinks import JsonlSink
    from live.util.clock import FakeClock

    bus = EventBus(FakeClock())
    log = tmp_path / "events.jsonl"
    bus.subscribe(JsonlSink(log))  # subscribed before them, as in a run
    (tmp_path / "pics").mkdir()
    out = snapshots(tmp_path / "pics", bus.publish)
    bus.subscribe(out, closes_first=True)
    bus.publish(crossing(3.0))
    out.on_percept(make_percept([[10, 10, 50, 90]], t=3.0, seq=3))
    bus.close()  # no event loop here: only the close can publish the picture
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["type"] for e in logged] == ["crossing", "snapshot"]
    assert (tmp_path / "pics" / logged[1]["file"]).is_file()
