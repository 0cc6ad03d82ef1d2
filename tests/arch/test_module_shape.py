"""The shape of the code: no import cycles, the runtime apart, each layer below the next.

Read from the source, so an import inside a function counts like any other:
a cycle broken by moving an import into a function is still a cycle. A module's
length is no rule here: a module is one job, whatever its length, and a long one
is a reason for a reader to look, not for a test to fail.
"""

from __future__ import annotations

from tests.arch.imports import PACKAGES, ROOT, cycles, edges, modules


def _graph() -> dict[str, set[str]]:
    return {name: {m for m, _ in targets} for name, targets in edges(modules()).items()}


def test_no_module_imports_itself_back_even_from_inside_a_function() -> None:
    assert cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_live_runtime_imports_nothing_else_of_lookout() -> None:
    outside = {
        name: sorted(m for m in targets if m.split(".")[0] != "live")
        for name, targets in _graph().items()
        if name.split(".")[0] == "live"
    }
    assert {name: found for name, found in outside.items() if found} == {}


def test_perception_and_the_models_do_not_reach_into_the_tools_or_the_app() -> None:
    upward = ("tools", "device.app", "device.outputs", "device.cli")
    found = {
        name: sorted(m for m in targets if m.startswith(upward))
        for name, targets in _graph().items()
        if name.startswith("models") or name in PERCEPTION_CORE
    }
    assert {name: hits for name, hits in found.items() if hits} == {}


PERCEPTION_CORE = {
    "device.vision.frame",
    "device.vision.percept",
    "device.vision.regions",
    "device.vision.tracker",
    "device.vision.kalman",
    "device.vision.presence",
    "device.vision.lines",
    "device.vision.zones",
    "device.vision.scene",
    "device.vision.motion",
    "device.vision.perception",
    "device.vision.count_report",
    "device.vision.shared_detector",
}


def test_the_outputs_read_the_device_through_its_view_never_the_app() -> None:
    found = {
        name: sorted(m for m in targets if m.startswith(("device.app", "device.cli")))
        for name, targets in _graph().items()
        if name.startswith("device.outputs")
    }
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_sources_feeds_and_audio_know_nothing_above_them() -> None:
    upward = ("tools", "device.app", "device.outputs", "device.cli")
    found = {
        name: sorted(m for m in targets if m.startswith(upward))
        for name, targets in _graph().items()
        if name.startswith(("device.sources", "device.feeds", "device.audio"))
    }
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_every_package_is_read() -> None:
    assert {name.split(".")[0] for name in modules()} == set(PACKAGES)
    assert (ROOT / "device" / "vision" / "perception.py").exists()
