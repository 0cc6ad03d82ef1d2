"""--profile: defaults fitted to a CPU, never over what the user set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from device.config import Config, ConfigError, build
from device.config.detector.profiles import board_from_text, detect_board


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
    assert (pi4.perception.precision, pi4.detection_fps()) == ("int8", 1.0)
    with_line = config(tmp_path, profile="pi4", lines=["door=0.5,0,0.5,1"])
    assert with_line.detection_fps() == 2.5  # lines need more detections than a count
    flag = config(tmp_path, profile="pi4", detect_fps="3", precision="fp32")
    assert (flag.perception.precision, flag.detection_fps()) == ("fp32", 3.0)
    in_file = config(tmp_path, 'profile = "pi4"\nprecision = "fp32"\n')
    assert (in_file.perception.precision, in_file.detection_fps()) == ("fp32", 1.0)


def test_pi5_and_laptop_keep_the_default_rates(tmp_path: Path) -> None:
    assert (config(tmp_path, profile="pi5").perception.precision) == "int8"
    laptop = config(tmp_path, profile="laptop")
    assert (laptop.perception.precision, laptop.detection_fps()) == ("auto", 2.0)
    assert config(tmp_path).perception.profile == "none"


def test_an_unknown_profile_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--profile must be one of none, auto, pi4, pi5"):
        config(tmp_path, profile="pi3")


def test_one_detector_thread_by_default_and_the_setting_reaches_onnxruntime(
    tmp_path: Path,
) -> None:
    from device.app.parts import detector_factory

    def intra_op_threads(cfg: Config) -> int:
        detector = detector_factory(cfg)()
        return int(detector.backend.intra_op_threads)

    assert intra_op_threads(config(tmp_path)) == 1  # the least CPU per detection, any backend
    ort = {"backend": "onnxruntime"}
    assert intra_op_threads(config(tmp_path, detector_threads="2", **ort)) == 2
    assert intra_op_threads(config(tmp_path, detector_threads="0", **ort)) == 0  # its own
    with pytest.raises(ConfigError, match=r"^--detector-threads"):
        config(tmp_path, detector_threads="-1")


def test_auto_on_an_unknown_board_keeps_the_defaults_where_a_detection_is_cheap() -> None:
    from device.config.detector.profiles import measured_defaults

    timed: list[str] = []

    def fast(precision: str) -> float:
        timed.append(precision)
        return 50.0  # 2 a second: 10 % of a core

    chosen, line = measured_defaults(scene=False, timer=fast)
    assert chosen == {} and timed == ["auto"]  # int8 is not even loaded
    assert "50 ms" in line and "the defaults" in line


def test_auto_on_a_slow_unknown_board_picks_int8_and_a_rate_that_fits_a_quarter_core() -> None:
    from device.config.detector.profiles import measured_defaults

    slow = {"auto": 600.0, "int8": 400.0}.__getitem__  # a Pi 4 class CPU
    chosen, line = measured_defaults(scene=False, timer=slow)
    assert chosen == {"precision": "int8", "detect_fps": 0.5}  # 0.625 fits: half steps down
    assert "400 ms in int8" in line and "20% of a core" in line
    # Lines need 2.5 a second whatever it costs: said, not hidden.
    chosen, line = measured_defaults(scene=True, timer=slow)
    assert chosen == {"precision": "int8", "detect_fps": 2.5}
    assert "over budget" in line
    mid = {"auto": 150.0, "int8": 100.0}.__getitem__  # fp32 at 2/s would be 30 %
    assert measured_defaults(scene=False, timer=mid)[0] == {"precision": "int8"}


def test_auto_times_the_real_detector_here_and_the_run_says_what_it_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from device.config.detector import profiles

    monkeypatch.setattr(profiles, "MODEL_FILES", (tmp_path / "no-such-model",))
    ms = profiles.time_detection("auto")  # as the run chooses the detector (backend, precision)
    assert 1 < ms < 10_000  # a real inference, not a constant
    chosen, line = profiles.profile_choice("auto", scene=False)
    assert line.startswith(f"profile auto: a detection takes {ms:.0f} ms here")
    cfg = config(tmp_path, profile="auto")
    assert cfg.perception.precision == chosen.get("precision", "auto")


def test_a_detector_that_cannot_be_timed_leaves_the_defaults_and_says_why() -> None:
    from device.config.detector.profiles import measured_defaults
    from models.detector import DetectorError

    def broken(precision: str) -> float:
        raise DetectorError("detector model not found: /x.onnx")

    chosen, line = measured_defaults(scene=False, timer=broken)
    assert chosen == {} and "could not be timed (detector model not found" in line


def test_the_run_says_what_the_profile_chose_and_what_was_set_over_it() -> None:
    from tests.cli import lookout  # a whole run: in a process of its own

    common = ("--duration", "1", "--pace", "fast", "--no-http", "--model", "local")
    result = lookout("run", "--profile", "pi4", "--precision", "fp32", *common)
    assert result.returncode == 0, result.stderr
    said = result.stdout.splitlines()
    assert said[0].startswith("detector: ")  # how the detector runs here comes first
    assert said[1] == (
        "profile pi4: precision int8, detect-fps 1.0 (set explicitly instead: precision fp32)"
    )


def test_detections_too_far_apart_to_track_count_each_frame_and_refuse_lines(
    tmp_path: Path,
) -> None:
    from device.vision.perception import Perception
    from device.vision.tracker import can_follow

    assert can_follow(1 / 2.0) and can_follow(1 / 0.6) and not can_follow(1 / 0.5)

    def unused() -> Any:  # never loaded: only the rate is looked at
        raise AssertionError("no detection here")

    assert not Perception(unused, detect_fps=0.3).linked
    assert Perception(unused, detect_fps=2.0).linked
    with pytest.raises(ConfigError, match=r"^lines and zones need more than 0.5 detections"):
        config(tmp_path, detect_fps="0.4", lines=["door=0.5,0,0.5,1"])
    assert config(tmp_path, detect_fps="0.4").detection_fps() == 0.4  # a count alone is fine


def test_at_a_third_of_a_detection_a_second_the_run_still_counts_the_people_in_view(
    tmp_path: Path,
) -> None:
    import json

    from tests.cli import lookout  # a whole run: in a process of its own

    events = tmp_path / "events.jsonl"
    result = lookout(
        "run", "--detect-fps", "0.3", "--duration", "60", "--pace", "fast", "--no-http",
        "--model", "local", "--events", str(events),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith(
        "at 0.3 detections a second people cannot be followed"
    )
    counts = [json.loads(line) for line in events.read_text().splitlines()]
    known = [e for e in counts if e["type"] == "count" and e["count"] is not None]
    # Tracked, nobody would be confirmed after the first frame; the sample video always
    # has 3 to 8 people in view.
    assert len(known) >= 2 and min(e["count"] for e in known) >= 2
    assert all(abs(e["count"] - e["raw"]) <= 2 for e in known)
