"""The configuration is a leaf of device/: the app, the outputs and the CLI read it; it
reads none of them, and no import cycle runs through it (also none hidden in a function)."""

from __future__ import annotations

from tests.arch.imports import cycles, edges, modules


def test_no_cycle_runs_through_the_configuration_even_through_imports_in_functions() -> None:
    graph = {name: {target for target, _ in found} for name, found in edges(modules()).items()}
    through = [
        cycle for cycle in cycles(graph) if any(m.startswith("device.config") for m in cycle)
    ]
    assert through == []


def test_the_configuration_loads_only_itself_at_import_time() -> None:
    found = edges(modules())
    outside = {
        (name, target)
        for name, targets in found.items()
        if name.startswith("device.config")
        for target, at_import in targets
        if at_import and not target.startswith("device.config")
    }
    assert outside == set()
