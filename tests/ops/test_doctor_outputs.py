"""``lookout doctor --config`` checks every output the file configures, as run uses it.

It said ``all good`` with an unreachable broker and a taken status page port.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests.cli import lookout_in_process
from tests.datafiles import data_file
from tests.ops.support import Broker, free_port, mosquitto_path, need_tool


def _doctor(tmp_path: Path, settings: str) -> tuple[int, list[str]]:
    config = tmp_path / "cfg.toml"
    config.write_text(f'source = "{data_file("vtest.avi")}"\nmodel = "local"\n{settings}')
    result = lookout_in_process("doctor", "--config", str(config))
    return result.returncode, result.stdout.splitlines()


def _lines(lines: list[str], what: str) -> list[str]:
    return [line for line in lines if line[7:].startswith(what)]


def test_doctor_fails_each_configured_output_that_would_not_work(tmp_path: Path) -> None:
    dead_broker = free_port()  # nothing listens there
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, lines = _doctor(
            tmp_path,
            f'mqtt = "mqtt://127.0.0.1:{dead_broker}"\nhttp = "127.0.0.1:{port}"\n'
            f'events = "{tmp_path}/no/such/folder/events.jsonl"\n',
        )
    assert code == 1, lines
    assert "all good" not in lines
    (mqtt,) = _lines(lines, "mqtt")
    assert mqtt.startswith("[FAIL]") and f"127.0.0.1:{dead_broker}" in mqtt, mqtt
    (page,) = _lines(lines, "status page")
    assert page.startswith("[FAIL]") and f"127.0.0.1:{port}" in page and "in use" in page, page
    (events,) = _lines(lines, "events")
    assert events.startswith("[FAIL]") and "does not exist" in events, events


def test_doctor_says_a_broker_accepted_the_device_or_why_it_refused(tmp_path: Path) -> None:
    executable = need_tool(mosquitto_path(), "mosquitto", "mosquitto")
    (tmp_path / "broker").mkdir()
    broker = Broker(executable, tmp_path / "broker", users={"cam": "right"})
    broker.start()
    try:
        good = f'mqtt = "mqtt://cam:right@127.0.0.1:{broker.port}"\nhttp = ""\n'
        code, lines = _doctor(tmp_path, good)
        (mqtt,) = _lines(lines, "mqtt")
        assert mqtt.startswith("[  ok]") and "CONNECT accepted" in mqtt, lines
        assert code == 0 and lines[-1] in {
            "all good",
            *(f"no problem found; {n} warning(s) above ([warn])" for n in range(1, 9)),
        }, lines
        bad = f'mqtt = "mqtt://cam:wrong@127.0.0.1:{broker.port}"\nhttp = ""\n'
        code, lines = _doctor(tmp_path, bad)
        (mqtt,) = _lines(lines, "mqtt")
        assert mqtt.startswith("[FAIL]") and "refused" in mqtt and "wrong" not in mqtt, mqtt
        assert code == 1
    finally:
        broker.stop()
