"""Two devices started with one configuration file (the default /etc/lookout/lookout.toml
on a host with two cameras), both editing their scenes on their status pages at once.

Two real ``lookout run`` processes, real HTTP: every edit is answered saved and is in
the file, the file is valid at every step and keeps its layout, and the next start
reads both devices' lines (an edit never erases the other device's).
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

from device.config import build
from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.support import free_port, wait_until

CONFIG = """\
# One file, two cameras: each gets its source and id on its command line.
[scene.lines.shared]
points = [[0.5, 0.9], [0.5, 0.1]]  # drawn before the second camera came
"""
EDITS = 8


def put(port: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/scene", data=json.dumps(body).encode(), method="PUT",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.load(response)
    except urllib.error.HTTPError as error:
        return int(error.code), json.load(error)


def answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/scene", timeout=5).close()
    except OSError:
        return False
    return True


def start(tmp_path: Path, config: Path, name: str, port: int) -> subprocess.Popen[bytes]:
    with (tmp_path / f"{name}.out").open("wb") as out:
        return subprocess.Popen(
            [*LOOKOUT, "run", "--config", str(config), "--source", str(data_file("vtest.avi")),
             "--loop", "--model", "local", "--detect-fps", "1", "--device-id", name,
             "--http", f"127.0.0.1:{port}", "--events", str(tmp_path / f"{name}.jsonl")],
            cwd=REPO_ROOT, env=offline_env(), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip


def edit_away(name: str, port: int, answers_got: list[tuple[int, dict[str, Any]]]) -> None:
    """One line more at each edit; the second device also deletes the shared line."""
    lines: dict[str, Any] = {"shared": {"points": [[0.5, 0.9], [0.5, 0.1]]}}
    for i in range(EDITS):
        lines[f"{name}{i}"] = {"points": [[0.1 + i * 0.05, 0.1], [0.9, 0.9]]}
        if name == "cam2" and i == EDITS // 2:
            del lines["shared"]
        answers_got.append(put(port, {"lines": lines}))


def test_two_devices_editing_one_file_at_once_both_keep_their_edits(tmp_path: Path) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text(CONFIG)
    ports = {"cam1": free_port(), "cam2": free_port()}
    runs = {name: start(tmp_path, config, name, port) for name, port in ports.items()}
    got: dict[str, list[tuple[int, dict[str, Any]]]] = {name: [] for name in ports}
    try:
        for name, port in ports.items():
            wait_until(partial(answers, port), 60, f"{name}'s status page")
        editors = [
            threading.Thread(target=edit_away, args=(name, port, got[name]))
            for name, port in ports.items()
        ]
        for editor in editors:
            editor.start()
        for editor in editors:
            editor.join(120)
    finally:
        for run in runs.values():
            run.send_signal(signal.SIGTERM)
        codes = [run.wait(30) for run in runs.values()]
    assert codes == [0, 0], [(tmp_path / f"{n}.out").read_text()[-2000:] for n in ports]
    for name, answered in got.items():
        assert len(answered) == EDITS
        for status, answer in answered:
            assert status == 200 and answer["saved"] == str(config), (name, answer)
            assert "not_saved" not in answer
    again = build({}, config_path=config, environ={}, system_config=tmp_path / "none.toml")
    assert sorted(again.scene.lines) == sorted(f"{n}{i}" for n in ports for i in range(EDITS))
    text = config.read_text()
    assert text.startswith("# One file, two cameras") and "[lines." not in text
    assert "[scene.lines.cam17]" in text and "shared" not in text
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    notes = [a.get("note", "") for _, a in got["cam1"] + got["cam2"]]
    assert any("also holds changes made elsewhere" in note for note in notes)
