"""Editing the lines and zones of a running scene, and writing them back to the config file.

Synthetic tracks as in ``test_lines_zones.py``: a renamed line keeps its totals and who
is on which side, a moved one starts at 0, a zone keeps its visits through a rename and a
new dwell time; the TOML file keeps everything but its lines and zones as the user wrote it.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from device.config import build
from device.config.scene.file import scene_toml, with_scene, write_scene
from device.config.scene.specs import parse_lines, parse_zones
from device.events import SceneChanged
from device.vision.scene import Scene, SceneSpec
from tests.device.test_lines_zones import SHAPE, track

POST = ((0.5, 0.8), (0.5, 0.2))
SQUARE = ((0.2, 0.2), (0.6, 0.2), (0.6, 0.6), (0.2, 0.6))


def cross(scene: Scene, t0: float, *, key: int = 1, back: bool = False) -> float:
    """Walk one person across x = 50 px (left to right: ``in``); the time after."""
    xs = [30.0, 40.0, 60.0, 70.0]
    if back:
        xs.reverse()
    t = t0
    for x in xs:
        tr = track(x, 50, id=key, key=key, t=t)
        scene.update((tr,), (tr,), SHAPE, t)
        t += 0.2
    return t


def test_a_renamed_line_keeps_its_totals_and_a_moved_one_starts_at_zero() -> None:
    scene = Scene(SceneSpec(lines={"post": POST}))
    t = cross(scene, 0.0)
    t = cross(scene, t, key=2)
    assert scene.line_totals()["post"].entered == 2
    edits = scene.replace(SceneSpec(lines={"door": POST}), lines_were={"door": "post"})
    assert [(e.how, e.name, e.was) for e in edits] == [("renamed", "door", "post")]
    assert set(scene.line_totals()) == {"door"}
    assert scene.line_totals()["door"].entered == 2
    t = cross(scene, t, key=3, back=True)
    assert (scene.line_totals()["door"].entered, scene.line_totals()["door"].exited) == (2, 1)
    moved = ((0.8, 0.8), (0.8, 0.2))
    edits = scene.replace(SceneSpec(lines={"door": moved}))
    assert [(e.how, e.name) for e in edits] == [("moved", "door")]
    assert "its totals start again at 0" in edits[0].said()
    assert scene.line_totals()["door"].entered == 0 and scene.line_totals()["door"].exited == 0


def test_a_line_renamed_while_someone_stands_on_one_side_counts_their_crossing_once() -> None:
    scene = Scene(SceneSpec(lines={"post": POST}))
    for i, x in enumerate([30.0, 40.0]):  # on the left side, seen twice
        tr = track(x, 50, t=i * 0.2)
        scene.update((tr,), (tr,), SHAPE, i * 0.2)
    scene.replace(SceneSpec(lines={"door": POST}), lines_were={"door": "post"})
    for i, x in enumerate([60.0, 70.0]):
        tr = track(x, 50, t=0.4 + i * 0.2)
        events = scene.update((tr,), (tr,), SHAPE, 0.4 + i * 0.2)
        if events:
            assert [e.to_dict()["line"] for e in events] == ["door"]
    assert scene.line_totals()["door"].entered == 1


def test_removed_added_and_swapped_names_are_said_as_such() -> None:
    other = ((0.1, 0.9), (0.9, 0.9))
    scene = Scene(SceneSpec(lines={"a": POST, "b": other}))
    cross(scene, 0.0)
    edits = scene.replace(SceneSpec(lines={"b": POST, "a": other}), lines_were={"b": "a", "a": "b"})
    assert sorted((e.how, e.name, e.was) for e in edits) == [
        ("renamed", "a", "b"),
        ("renamed", "b", "a"),
    ]
    assert scene.line_totals()["b"].entered == 1 and scene.line_totals()["a"].entered == 0
    edits = scene.replace(SceneSpec(lines={"c": other}))
    assert sorted((e.how, e.name) for e in edits) == [
        ("added", "c"),
        ("removed", "a"),
        ("removed", "b"),
    ]


def test_a_zone_keeps_its_visits_through_a_rename_and_a_new_dwell_time() -> None:
    scene = Scene(SceneSpec(zones={"kiosk": (SQUARE, 10.0)}))
    inside = track(40, 40, t=0.0)
    scene.update((inside,), (inside,), SHAPE, 0.0)
    scene.update((inside,), (inside,), SHAPE, 2.0)
    edits = scene.replace(SceneSpec(zones={"till": (SQUARE, 3.0)}), zones_were={"till": "kiosk"})
    assert sorted(e.how for e in edits) == ["dwell", "renamed"]
    events = scene.update((inside,), (inside,), SHAPE, 3.2)
    dwells = [e.to_dict() for e in events if e.type == "dwell"]
    # Inside since 0.0: past the new 3 s dwell time at 3.2 s, said once, under the new name.
    assert [(d["zone"], d["seconds"]) for d in dwells] == [("till", 3.2)]
    assert scene.zone_states()["till"].people == 1


def test_the_scene_event_says_what_each_line_and_zone_continues() -> None:
    """What the status page, MQTT and the log read of an edit: a renamed zone (with a new
    dwell time) keeps its visits, a moved line and a new one start afresh, an untouched
    line goes on as it was."""
    other = ((0.1, 0.9), (0.9, 0.9))
    scene = Scene(SceneSpec(lines={"post": POST, "door": other}, zones={"kiosk": (SQUARE, 10.0)}))
    edits = scene.replace(
        SceneSpec(
            lines={"post": ((0.4, 0.8), (0.4, 0.2)), "door": other, "gate": POST},
            zones={"till": (SQUARE, 3.0)},
        ),
        zones_were={"till": "kiosk"},
    )
    event = SceneChanged(
        lines={},
        zones={},
        changes=[{"kind": e.kind, "name": e.name, "how": e.how, "was": e.was} for e in edits],
    )
    assert event.before("zone", "till") == ("kiosk", True)
    assert event.before("line", "post") == ("post", False)
    assert event.before("line", "gate") == ("", False)
    assert event.before("line", "door") == ("door", True)


def test_an_unchanged_scene_is_no_edit() -> None:
    scene = Scene(SceneSpec(lines={"post": POST}, zones={"kiosk": (SQUARE, 10.0)}))
    assert scene.replace(SceneSpec(lines={"post": POST}, zones={"kiosk": (SQUARE, 10.0)})) == []


CONFIG = """\
# The shop's camera: do not lose this comment.
detect_fps = 5   # five a second for the lines

[lines.post]
points = [[0.5, 0.9], [0.5, 0.1]]

[outputs]
mqtt = "mqtt://broker.local"
"""


def test_the_config_file_keeps_its_comments_and_other_settings_and_reads_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text(CONFIG)
    lines = parse_lines({"door": {"points": [[0.25, 0.5], [0.75, 0.5]]}})
    zones = parse_zones({"queue": {"points": [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4]], "dwell": 20}})
    write_scene(path, lines, zones)
    text = path.read_text()
    assert "# The shop's camera: do not lose this comment." in text
    assert "detect_fps = 5   # five a second for the lines" in text
    assert "[lines.post]" not in text
    config = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    assert config.scene.lines == lines and config.scene.zones == zones
    assert config.outputs.mqtt == "mqtt://broker.local"


def test_a_lookout_table_keeps_its_lines_inside_it(tmp_path: Path) -> None:
    text = '[lookout]\nhttp = "127.0.0.1:9000"\n\n[lookout.lines.post]\npoints = [[0, 0], [1, 1]]\n'
    lines = parse_lines({"door": {"points": [[0.25, 0.5], [0.75, 0.5]]}})
    out = with_scene(text, lines, {})
    assert "[lookout.lines.door]" in out and "post" not in out
    path = tmp_path / "c.toml"
    path.write_text(out)
    config = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    assert config.scene.lines == lines


def test_a_read_only_file_is_not_written_and_stays_as_it_was(tmp_path: Path) -> None:
    # The owner made it read-only: a device running as root must respect that too.
    path = tmp_path / "lookout.toml"
    path.write_text(CONFIG)
    path.chmod(stat.S_IRUSR)
    lines = parse_lines({"door": {"points": [[0.25, 0.5], [0.75, 0.5]]}})
    with pytest.raises(PermissionError, match="read-only"):
        write_scene(path, lines, {})
    assert path.read_text() == CONFIG


def test_the_toml_offered_to_copy_reads_as_the_same_scene(tmp_path: Path) -> None:
    lines = parse_lines({"door": {"points": [[0.25, 0.5], [0.75, 0.5]]}})
    zones = parse_zones({"queue": {"points": [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4]]}})
    path = tmp_path / "copied.toml"
    path.write_text(scene_toml(lines, zones))
    config = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    assert config.scene.lines == lines and config.scene.zones == zones
