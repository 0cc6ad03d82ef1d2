"""A named camera's lines and zones written back into its own table of the configuration
file, in the layouts the reader accepts, and read by the next start as that camera's
(device/config/scene/file.py with ``camera=``).

Real files, and ``build`` (what ``lookout run --config`` reads) as the judge: the other
camera's scene and the device's own stay as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from device.config import build
from device.config.scene.file import write_scene
from device.config.scene.specs import LineSpec, ZoneSpec, parse_lines, parse_zones

POST = parse_lines({"post": {"points": [[0.5, 0.9], [0.5, 0.1]]}})
QUEUE = parse_zones({"queue": {"points": [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4]], "dwell": 20}})
DOOR_A = "[cameras.door.lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]  # the old one\n"
LAYOUTS = {
    "tables": '[cameras.door]\nsource = "door.avi"\n\n'
    + DOOR_A
    + '\n[cameras.till]\nsource = "t.avi"\n',
    "scene section": (
        '[cameras.door]\nsource = "door.avi"\n\n[cameras.door.scene]\ndwell = 12\n\n'
        "[cameras.door.scene.lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n\n"
        '[cameras.till]\nsource = "t.avi"\n'
    ),
    "inside lookout": (
        '[lookout]\ndetect_fps = 5\n\n[lookout.cameras.door]\nsource = "door.avi"\n\n'
        "[lookout.cameras.door.lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n\n"
        '[lookout.cameras.till]\nsource = "t.avi"\n'
    ),
    "inline": (
        'cameras.door = { source = "door.avi", lines = { a = { points = [[0.1, 0.1], '
        '[0.9, 0.9]] } } }\ncameras.till = { source = "t.avi" }\n'
    ),
}
Scene = tuple[dict[str, LineSpec], dict[str, ZoneSpec]]


def next_start(path: Path, tmp_path: Path, camera: str) -> Scene:
    config = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    scene = config.camera(camera).scene
    return dict(scene.lines), dict(scene.zones)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_cameras_edit_goes_into_its_own_table_and_leaves_the_other_camera_alone(
    tmp_path: Path, layout: str
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text(LAYOUTS[layout])
    started = next_start(path, tmp_path, "door")
    till = next_start(path, tmp_path, "till")
    assert list(started[0]) == ["a"] and till == ({}, {})
    saved = write_scene(path, POST, QUEUE, before=started, camera="door")
    assert next_start(path, tmp_path, "door") == (POST, QUEUE) == (saved.lines, saved.zones)
    assert next_start(path, tmp_path, "till") == till
    device = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    assert device.scene.lines == {} and device.scene.zones == {}  # not the device's own
    if layout == "tables":
        assert "[cameras.door.lines.post]" in path.read_text()
        assert "[cameras.door.zones.queue]" in path.read_text()


def test_a_camera_with_no_table_of_its_own_gets_one(tmp_path: Path) -> None:
    # The cameras came from --source door=... --source till=...: the file names none.
    path = tmp_path / "lookout.toml"
    path.write_text("# the shop\ndetect_fps = 5\n")
    write_scene(path, POST, {}, before=({}, {}), camera="till")
    assert path.read_text() == (
        "# the shop\ndetect_fps = 5\n\n"
        "[cameras.till.lines.post]\npoints = [[0.5, 0.9], [0.5, 0.1]]\n\n"
    )
    config = build(
        {"source": ["door=a.avi", "till=b.avi"]},
        config_path=path,
        environ={},
        system_config=tmp_path / "none.toml",
    )
    assert config.camera("till").scene.lines == POST and config.camera("door").scene.lines == {}


def test_a_camera_that_had_the_devices_lines_keeps_them_written_as_its_own(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text(
        '[lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n\n[cameras.door]\nsource = "d.avi"\n\n'
        '[cameras.till]\nsource = "t.avi"\n'
    )
    inherited = next_start(path, tmp_path, "door")
    assert list(inherited[0]) == ["a"]  # every camera has the device's lines
    # A line added on door: door now has a and post of its own; till still has the device's.
    write_scene(path, inherited[0] | POST, {}, before=inherited, camera="door")
    assert list(next_start(path, tmp_path, "door")[0]) == ["a", "post"]
    assert list(next_start(path, tmp_path, "till")[0]) == ["a"]
    # Every line taken off till: it keeps none (an empty table), not the device's again.
    write_scene(path, {}, {}, before=inherited, camera="till")
    assert next_start(path, tmp_path, "till") == ({}, {})
    assert "[cameras.till.lines]" in path.read_text()
    assert list(next_start(path, tmp_path, "door")[0]) == ["a", "post"]
