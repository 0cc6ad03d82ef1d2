"""--profile: defaults fitted to a CPU, never over what the user set."""

from __future__ import annotations

from pathlib import Path

import pytest

from device.app.config import Config, ConfigError, build
from device.app.profiles import board_from_text, detect_board


def config(tmp_path: Path, file_text: str | None = None, **flags: object) -> Config:
    path = tmp_path / "lookout.toml"
    if file_text is not None:
        path.write_text(file_text)
    return build(
        flags,
        config_path=path if file_text is not None else None,
        environ={},
        system_config=tmp_path / "none.toml",
    )


def test_the_board_is_read_from_the_device_tree_or_cpuinfo(tmp_path: Path) -> None:
    assert board_from_text("Raspberry Pi 4 Model B Rev 1.4\x00") == "pi4"
    assert board_from_text("Model\t\t: Raspberry Pi 5 Model B Rev 1.0") == "pi5"
    assert board_from_text("model name\t: Intel(R) Core(TM) i7") == "laptop"
    tree = tmp_path / "model"
    tree.write_text("Raspberry Pi 5 Model B Rev 1.0")
    assert detect_board((tmp_path / "missing", tree)) == "pi5"
    assert detect_board((tmp_path / "missing",)) == "laptop"


def test_a_pi4_profile_sets_int8_and_a_lower_rate_but_what_is_given_wins(
    tmp_path: Path,
) -> None:
    pi4 = config(tmp_path, profile="pi4")
    assert (pi4.precision, pi4.detection_fps()) == ("int8", 1.0)
    with_line = config(tmp_path, profile="pi4", lines=["door=0.5,0,0.5,1"])
    assert with_line.detection_fps() == 2.5  # lines need more detections than a count
    flag = config(tmp_path, profile="pi4", detect_fps="3", precision="fp32")
    assert (flag.precision, flag.detection_fps()) == ("fp32", 3.0)
    in_file = config(tmp_path, 'profile = "pi4"\nprecision = "fp32"\n')
    assert (in_file.precision, in_file.detection_fps()) == ("fp32", 1.0)


def test_pi5_and_laptop_keep_the_default_rates(tmp_path: Path) -> None:
    assert (config(tmp_path, profile="pi5").precision) == "int8"
    laptop = config(tmp_path, profile="laptop")
    assert (laptop.precision, laptop.detection_fps()) == ("fp32", 2.0)
    assert config(tmp_path).profile == "none"


def test_an_unknown_profile_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--profile must be one of none, auto, pi4, pi5"):
        config(tmp_path, profile="pi3")
