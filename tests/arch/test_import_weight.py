"""Perception imports numpy, OpenCV and onnxruntime only; the local model, no Gemini SDK.

A script or a test that wants the tracker, the line counter or the detector
must not pay for the live session, google-genai, aiohttp or sqlite3 (seconds
of start-up on a Pi), and perception code must not reach into the model-tool
layer for its own values. A command with the local model (``lookout run``,
``ask``, ``doctor``, ``report``) must not pay for google-genai (about a second
of every start) nor, without a status page, for aiohttp.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.arch.imports import PACKAGES, ROOT, modules
from tests.datafiles import data_file

# What perception is: its values, the frame, sources and feeds, the detector, the scene.
PERCEPTION = (
    "device.vision.frame",
    "device.vision.percept",
    "device.vision.regions",
    "device.grid",
    "device.vision.kalman",
    "device.vision.tracker",
    "device.vision.presence",
    "device.vision.lines",
    "device.vision.zones",
    "device.vision.scene",
    "device.vision.motion",
    "device.vision.perception",
    "device.vision.count_report",
    "device.app.count",
    "device.events",
    "device.sources",
    "device.feeds",
    "device.outputs.page.render",
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


@pytest.mark.parametrize(
    "name", ["device.vision.lines", "device.vision.tracker", "device.vision.percept"]
)
def test_the_geometry_and_tracking_need_numpy_alone(name: str) -> None:
    extra = _loaded([name])[name]
    third_party = {m.split(".")[0] for m in extra if m.split(".")[0] not in sys.stdlib_module_names}
    assert third_party - {"device", "models", "live", "numpy"} == set()


def test_the_probe_sees_a_heavy_import() -> None:
    # The check can fail: the Gemini adapter does load google-genai.
    assert "google.genai" in _loaded(["models.gemini.model"])["models.gemini.model"]


# What each command loads with the local model: device/cli.py, and the modules its commands
# (and their parts) import inside functions on that path. A real run checks the list below.
LOCAL_COMMANDS = {
    "run": (
        "device.cli", "device.app.wiring", "device.app.cost", "device.log_limit",
        "device.outputs.camera_state", "models.gemini.vertex", "device.files.made",
        "models.choice", "models.cache",
    ),
    "ask": ("device.app.ask.command", "models.gemini.keys", "models.local.turns"),
    "doctor": (
        "device.app.doctor.command", "device.app.doctor.outputs", "device.app.parts",
        "device.audio.devices", "device.audio.open", "device.audio.tts",
        "device.outputs.page.http_address", "device.outputs.page.host_check",
    ),
    "report": ("device.app.report.command", "live.util.plural"),
}  # fmt: skip
NOT_FOR_LOCAL = ("google.genai", "aiohttp")


def _sdk(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == h or m.startswith(h + ".") for h in NOT_FOR_LOCAL)]


def test_the_local_commands_load_no_gemini_sdk_and_no_web_server() -> None:
    names = list(dict.fromkeys(m for path in LOCAL_COMMANDS.values() for m in path))
    loaded = _loaded(names)
    assert {name: _sdk(extra) for name, extra in loaded.items() if _sdk(extra)} == {}


RUN_AND_LIST = """
import json, os, sys
from device.cli import main

def listed():
    with open(sys.argv[1], "w") as out:
        json.dump(sorted(sys.modules), out)

hard_exit = os._exit
def exit_listed(code):
    listed()
    hard_exit(code)

os._exit = exit_listed  # a run whose threads linger ends so
code = main(sys.argv[2:])
listed()
sys.exit(code)
"""


def test_a_real_local_run_loads_what_the_list_says_and_no_gemini_sdk(tmp_path: Path) -> None:
    listing = tmp_path / "modules.json"
    video = data_file("vtest.avi")
    run = [
        "run", "--model", "local", "--source", str(video), "--duration", "0.5",
        "--pace", "fast", "--no-http", "--events", str(tmp_path / "events.jsonl"),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, str(listing), *run],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(listing.read_text())
    assert _sdk(modules) == []
    ours = {m for m in modules if m.split(".")[0] in PACKAGES}
    listed = {m for extra in _loaded(list(LOCAL_COMMANDS["run"])).values() for m in extra}
    assert sorted(ours - listed) == []
    assert [m for m in LOCAL_COMMANDS["run"] if m not in modules] == []  # nor less
