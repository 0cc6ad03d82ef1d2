"""Perception imports numpy, OpenCV and onnxruntime only.

A script or a test that wants the tracker, the line counter or the detector
must not pay for the live session, google-genai, aiohttp or sqlite3 (seconds
of start-up on a Pi), and perception code must not reach into the model-tool
layer for its own values.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.arch.imports import ROOT, modules

# What perception is: its values, the frame, sources and feeds, the detector, the scene.
PERCEPTION = (
    "device.frame",
    "device.percept",
    "device.regions",
    "device.grid",
    "device.kalman",
    "device.tracker",
    "device.presence",
    "device.lines",
    "device.zones",
    "device.scene",
    "device.motion",
    "device.perception",
    "device.perceive_video",
    "device.events",
    "device.sources",
    "device.feeds",
    "device.outputs.render",
    "models.detections",
    "models.detector",
)
HEAVY = ("google.genai", "sqlite3", "aiohttp", "pydantic", "live.session", "tools")

PROBE = """
import importlib, json, sys
loaded = {}
for name in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(name)
    loaded[name] = sorted(set(sys.modules) - before)
print(json.dumps(loaded))
"""


def _loaded(names: list[str]) -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[str]] = json.loads(out.stdout)
    return result


def _heavy(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_the_perception_modules_exist() -> None:
    known = modules()
    assert [name for name in PERCEPTION if name not in known] == []


def test_perception_loads_no_session_sdk_web_server_or_database() -> None:
    # Imported one after another in one fresh interpreter: what a module pulls in
    # is charged to the first that loads it, so each culprit is named.
    loaded = _loaded(list(PERCEPTION))
    assert {name: _heavy(extra) for name, extra in loaded.items() if _heavy(extra)} == {}
    everything = {m for extra in loaded.values() for m in extra}
    assert "numpy" in everything and "cv2" in everything and "onnxruntime" in everything


@pytest.mark.parametrize("name", ["device.lines", "device.tracker", "device.percept"])
def test_the_geometry_and_tracking_need_numpy_alone(name: str) -> None:
    extra = _loaded([name])[name]
    third_party = {m.split(".")[0] for m in extra if m.split(".")[0] not in sys.stdlib_module_names}
    assert third_party - {"device", "models", "live", "numpy"} == set()


def test_the_probe_sees_a_heavy_import() -> None:
    # The check can fail: the live session does load google-genai.
    assert _heavy(_loaded(["live.session"])["live.session"])
