"""Several cameras in one configuration (issue 34): ``[cameras.NAME]`` and ``--source NAME=``.

Each camera is the device's settings with its own over them, value by value; a device
that names no camera has one, ``main``, exactly as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from device.cli_flags import RUN_SETTINGS, parser
from device.config import Config
from device.config.cameras import MAIN
from device.config.layers import stacked
from device.vision.percept import MAIN_CAMERA
from tests.cli import lookout_in_process

NO_SYSTEM = Path("/nonexistent/lookout.toml")


def configured(*args: str, toml: str | None = None, tmp_path: Path | None = None) -> Config:
    namespace = parser().parse_args(["run", *args])
    path = None
    if toml is not None:
        assert tmp_path is not None
        path = tmp_path / "lookout.toml"
        path.write_text(toml)
    config, _ = stacked(
        {name: getattr(namespace, name) for name in RUN_SETTINGS},
        config_path=path,
        environ={},
        system_config=NO_SYSTEM,
    )
    return config


TWO = """
detect_fps = 2
threshold = 0.5

[cameras.door]
source = "door.mp4"
[cameras.door.lines.post]
points = [[0.56, 0.73], [0.56, 0.21]]

[cameras.till]
source = "till.mp4"
detect-fps = 5
privacy = true
[cameras.till.perception]
motion = "off"
"""


def test_each_camera_is_the_devices_settings_with_its_own_over_them(tmp_path: Path) -> None:
    config = configured(toml=TWO, tmp_path=tmp_path)
    assert config.camera_names == ["door", "till"]
    door, till = config.camera("door"), config.camera("till")
    assert (door.camera_name, door.source.source, door.perception.detect_fps) == (
        "door",
        "door.mp4",
        2.0,
    )
    assert list(door.scene.lines) == ["post"] and not door.device.privacy
    assert door.perception.threshold == 0.5  # the device's, not set by the camera
    assert (till.source.source, till.perception.detect_fps, till.device.privacy) == (
        "till.mp4",
        5.0,
        True,
    )
    assert till.perception.motion == "off" and till.scene.lines == {}
    # A camera's settings are a device of one camera: it names no cameras of its own.
    assert door.cameras == {} and door.camera_names == ["door"]


def test_flags_name_cameras_and_give_one_a_line() -> None:
    config = configured(
        "--source", "door=rtsp://door.lan/stream", "--source", "till=1",
        "--line", "door:post=0.5,0.1,0.5,0.9", "--line", "hall=0.2,0.1,0.2,0.9",
    )  # fmt: skip
    assert config.camera_names == ["door", "till"]
    door, till = config.camera("door"), config.camera("till")
    assert door.source.source == "rtsp://door.lan/stream" and till.source.source == "1"
    # The device's lines are a default: a camera with lines of its own has those alone
    # (a table is one value), one without has the device's.
    assert list(door.scene.lines) == ["post"]
    assert list(till.scene.lines) == ["hall"]


def test_a_flag_adds_to_a_cameras_file_settings(tmp_path: Path) -> None:
    config = configured(
        "--source", "door=other.mp4", "--line", "door:side=0.2,0.1,0.2,0.9",
        toml=TWO, tmp_path=tmp_path,
    )  # fmt: skip
    door = config.camera("door")
    assert door.source.source == "other.mp4"
    assert sorted(door.scene.lines) == ["post", "side"]
    assert config.camera("till").source.source == "till.mp4"


def test_a_device_that_names_no_camera_has_one_main_camera_as_before() -> None:
    config = configured("--source", "clip.mp4", "--line", "post=0.5,0.1,0.5,0.9")
    assert config.camera_names == [MAIN] == [MAIN_CAMERA]
    assert not config.named_cameras
    main = config.camera(MAIN)
    assert main.source.source == "clip.mp4" and list(main.scene.lines) == ["post"]
    assert configured("--source", "door=clip.mp4").camera_names == ["door"]


@pytest.mark.parametrize(
    ("args", "toml", "said"),
    [
        (["--source", "a.mp4", "--source", "b.mp4"], None, "name each camera"),
        (
            ["--source", "door=a", "--line", "till:p=0.5,0.1,0.5,0.9"],
            None,
            "--line 'till:p=0.5,0.1,0.5,0.9': no camera named 'till' (cameras: door)",
        ),
        (["--source", "door=a", "--source", "door=b"], None, "--source door= is given twice"),
        (
            ["--source", "front door=a", "--source", "till=b"],
            None,
            "--source 'front door=a': the camera's name 'front door' must be 1-40 letters",
        ),
        (["--source", "clip.mp4"], TWO, "--source 'clip.mp4' names no camera"),
        ([], "[cameras.door]\ndetector = 'x.onnx'\n", "cameras.door.detector is not a setting a"),
        ([], "[cameras.door]\ndetect_fps = -1\n", "cameras.door.detect_fps must be more than 0"),
        ([], "[cameras.door]\nnope = 1\n", "cameras.door.nope is not a setting a camera has"),
        ([], "[cameras.'front door']\nsource = 'a'\n", "camera 'front door' must be 1-40"),
        ([], "cameras = 3\n", "cameras must be a table of cameras"),
        (["--source", "door=a", "--detect-fps", "0"], None, "--detect-fps must be more than 0"),
    ],
)
def test_a_mistake_about_cameras_is_one_line_naming_it(
    tmp_path: Path, args: list[str], toml: str | None, said: str
) -> None:
    if toml is not None:
        (tmp_path / "lookout.toml").write_text(toml)
        args = [*args, "--config", str(tmp_path / "lookout.toml")]
    done = lookout_in_process("run", *args)
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr


def test_a_cameras_source_url_is_a_secret_like_the_devices() -> None:
    config = configured("--source", "door=rtsp://admin:S3cret@door.lan/stream")
    assert "S3cret" in config.secrets()


def test_count_takes_one_cameras_settings_from_a_configuration_of_several(
    tmp_path: Path,
) -> None:
    (tmp_path / "lookout.toml").write_text(TWO)
    config = str(tmp_path / "lookout.toml")
    done = lookout_in_process("count", "clip.mp4", "--config", config, "--camera", "hall")
    assert (done.returncode, done.stderr) == (
        2,
        "lookout: no camera named 'hall' (cameras: door, till)\n",
    )
