"""The shape of the code: no import cycles, the runtime apart, modules of one job.

Read from the source, so an import inside a function counts like any other:
a cycle broken by moving an import into a function is still a cycle.
"""

from __future__ import annotations

import ast

from tests.arch.imports import PACKAGES, ROOT, cycles, edges, modules

MAX_LINES = 400
KEPT_WHOLE = "Kept whole:"


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
    "device.frame",
    "device.percept",
    "device.regions",
    "device.tracker",
    "device.kalman",
    "device.presence",
    "device.lines",
    "device.zones",
    "device.scene",
    "device.motion",
    "device.perception",
    "device.count_report",
    "device.shared_detector",
}


def test_a_long_module_says_why_it_is_kept_whole() -> None:
    long = {}
    for name, path in modules().items():
        lines = path.read_text().count("\n")
        if lines <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if KEPT_WHOLE not in doc:
            long[name] = lines
    assert long == {}, f"over {MAX_LINES} lines without '{KEPT_WHOLE}' in the opening comment"


def test_every_package_is_read() -> None:
    assert {name.split(".")[0] for name in modules()} == set(PACKAGES)
    assert (ROOT / "device" / "perception.py").exists()
