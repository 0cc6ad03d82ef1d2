"""The scene written back into a configuration file, in every layout the reader accepts,
and read by the next start as it was saved (device/config/scene/file.py, layout.py).

Real files, and ``build`` (what ``lookout run --config`` reads) as the judge: an edit
goes where the file keeps its lines and zones, a removed one is gone at the next start,
another writer's changes stay, and a file the next start would refuse is not written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from device.config import build
from device.config.scene.file import with_scene, write_scene
from device.config.scene.specs import LineSpec, ZoneSpec, parse_lines, parse_zones

A = "points = [[0.1, 0.1], [0.9, 0.9]]\n"
DOOR = parse_lines({"door": {"points": [[0.25, 0.5], [0.75, 0.5]]}})
QUEUE = parse_zones({"queue": {"points": [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4]], "dwell": 20}})

LAYOUTS = {
    "top": "detect_fps = 5\n\n[lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n",
    "scene section": (
        '# the shop\n[scene]\nanchor = "feet"\n\n[scene.lines.a]\n'
        "points = [[0.1, 0.1], [0.9, 0.9]]  # the old door\n\n"
        '[outputs]\nhttp = "127.0.0.1:8765"\n'
    ),
    "lookout scene": (
        "[lookout]\ndetect_fps = 5\n\n[lookout.scene.lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n"
    ),
    "lookout": "[lookout]\ndetect_fps = 5\n\n[lookout.lines.a]\n" + A,
    "beside lookout": "[lookout]\ndetect_fps = 5\n\n[scene.lines.a]\n" + A,
    "inline": "detect_fps = 5\nlines = { a = { points = [[0.1, 0.1], [0.9, 0.9]] } }\n",
    "dotted": "detect_fps = 5\nlines.a.points = [[0.1, 0.1], [0.9, 0.9]]\n",
    "dotted in a section": (
        '[scene]\nlines.a.points = [[0.1, 0.1], [0.9, 0.9]]\n[outputs]\nhttp = "127.0.0.1:8765"\n'
    ),
}


def next_start(path: Path, tmp_path: Path) -> tuple[dict[str, LineSpec], dict[str, ZoneSpec]]:
    config = build({}, config_path=path, environ={}, system_config=tmp_path / "none.toml")
    return dict(config.scene.lines), dict(config.scene.zones)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_each_layout_is_edited_where_it_keeps_them_and_a_removal_stays_removed(
    tmp_path: Path, layout: str
) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text(LAYOUTS[layout])
    started = next_start(path, tmp_path)
    assert list(started[0]) == ["a"]
    moved = parse_lines({"a": {"points": [[0.2, 0.1], [0.9, 0.9]]}}) | DOOR
    saved = write_scene(path, moved, QUEUE, before=started)
    assert next_start(path, tmp_path) == (moved, QUEUE) == (saved.lines, saved.zones)
    text = path.read_text()
    if layout == "scene section":
        assert "[scene.lines.door]" in text and "# the old door" in text
        assert text.index("[scene.lines.a]") < text.index("[outputs]")  # in its place
    write_scene(path, {}, {}, before=(moved, QUEUE))
    assert next_start(path, tmp_path) == ({}, {})
    assert "points" not in path.read_text()


def test_what_another_writer_changed_meanwhile_stays_and_is_named(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("[scene.lines.a]\npoints = [[0.1, 0.1], [0.9, 0.9]]\n")
    at_start = next_start(path, tmp_path)
    # The other device (same file) adds a zone and moves a.
    other = parse_lines({"a": {"points": [[0.3, 0.1], [0.9, 0.9]]}})
    write_scene(path, other, QUEUE, before=at_start)
    # This one, still running a as it was, adds door: only door is its change.
    saved = write_scene(path, at_start[0] | DOOR, {}, before=at_start, known=at_start)
    assert next_start(path, tmp_path) == (other | DOOR, QUEUE)
    assert saved.others == ("line a", "zone queue")
    # This one removes a: the other's move of it goes too (the last edit of a name wins).
    write_scene(path, DOOR, {}, before=(at_start[0] | DOOR, {}))
    assert next_start(path, tmp_path) == (DOOR, QUEUE)


def test_a_file_the_next_start_would_refuse_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    broken = "detect_fps = 5\n[lines.a\n"  # edited by hand since the start
    path.write_text(broken)
    with pytest.raises(ValueError, match="does not read as a configuration now"):
        write_scene(path, DOOR, {}, before=({}, {}))
    assert path.read_text() == broken
    both = "[lines.a]\n" + A + "[scene.lines.b]\n" + A
    path.write_text(both)  # two places at once: the next start refuses it
    with pytest.raises(ValueError, match="are the same setting"):
        write_scene(path, DOOR, {}, before=({}, {}))
    assert path.read_text() == both
    assert [p.name for p in tmp_path.iterdir()] == ["lookout.toml"]


def test_a_linked_configuration_has_the_file_it_points_to_edited(tmp_path: Path) -> None:
    real = tmp_path / "managed" / "lookout.toml"
    real.parent.mkdir()
    real.write_text("detect_fps = 5\n")
    link = tmp_path / "lookout.toml"
    link.symlink_to(real)
    saved = write_scene(link, DOOR, {}, before=({}, {}))
    assert saved.path == real and link.is_symlink()
    assert next_start(link, tmp_path) == (DOOR, {})


@pytest.mark.skipif(os.geteuid() != 0, reason="changes owners: needs root")
def test_a_root_device_leaves_the_configuration_its_owner_s(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("detect_fps = 5\n")
    os.chown(path, 65534, 65534)
    path.chmod(0o640)
    write_scene(path, DOOR, QUEUE, before=({}, {}))
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640)


def test_a_huge_configuration_is_not_edited(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("# " + "x" * (300 * 1024) + "\ndetect_fps = 5\n")
    with pytest.raises(OSError, match="over 256 KiB is not edited"):
        write_scene(path, DOOR, {}, before=({}, {}))
    assert path.stat().st_size > 300 * 1024


def test_the_same_edit_from_a_second_device_leaves_the_file_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "lookout.toml"
    path.write_text("# ours\n")
    write_scene(path, DOOR, QUEUE, before=({}, {}))
    inode, text = path.stat().st_ino, path.read_text()
    saved = write_scene(path, DOOR, QUEUE, before=({}, {}), known=({}, {}))
    assert (path.stat().st_ino, path.read_text()) == (inode, text)
    assert (saved.lines, saved.zones) == (DOOR, QUEUE) and saved.others == ()


def test_a_line_and_a_zone_added_leave_every_comment_above_its_own_table() -> None:
    """tomlkit keeps a table's heading comment at the end of the table before it: a table
    added after that one must not come between the comment and its table."""
    text = (
        "# the plaza camera\ndetect_fps = 5\n\n"
        "# The lamp-post line\n[lines.post]\npoints = [[0.5, 0.9], [0.5, 0.1]]  # upwards\n\n"
        "# The bench zone\n[zones.bench]\npoints = [[0.1, 0.1], [0.4, 0.1], [0.4, 0.5]]\n"
        "dwell = 10\n\n"
        '# Where the counts go\n[mqtt]\nurl = "mqtt://broker.lan"\n'
    )
    edited = with_scene(
        text,
        {
            "post": LineSpec(points=((0.6, 0.9), (0.6, 0.1))),
            "door": LineSpec(points=((0.2, 0.2), (0.8, 0.2))),
        },
        {
            "bench": ZoneSpec(points=((0.1, 0.1), (0.4, 0.1), (0.4, 0.5)), dwell=10),
            "queue": ZoneSpec(points=((0.5, 0.5), (0.9, 0.5), (0.9, 0.9))),
        },
    )
    lines = edited.splitlines()
    for comment, table in (
        ("# The lamp-post line", "[lines.post]"),
        ("# The bench zone", "[zones.bench]"),
        ("# Where the counts go", "[mqtt]"),
    ):
        assert lines[lines.index(comment) + 1] == table, edited
    assert "points = [[0.6, 0.9], [0.6, 0.1]]  # upwards" in lines
    assert "dwell = 10" in lines  # as written, not 10.0
    assert lines.index("[lines.door]") < lines.index("# The bench zone")
    assert "\n\n\n" not in edited
