"""Many devices on the engines people already run (docs/fleet.md, scripts/fleet/): three real
``lookout run`` processes of two cameras each, one real Mosquitto, one real Prometheus with
the shipped configuration, rules and dashboard; and the shipped bridge between two real
Mosquitto processes."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.prometheus import (
    FLEET,
    Prometheus,
    dashboard_queries,
    local_config,
    prometheus_path,
    promtool_path,
)
from tests.ops.support import (
    Broker,
    Subscriber,
    free_port,
    mosquitto_path,
    need_tool,
    wait_until,
)

pytestmark = pytest.mark.slow

TOKEN = "fleet-token-0123456789"
DEVICES = ("shop-door", "shop-till", "depot-gate")
SITES = {"shop-door": "shop", "shop-till": "shop", "depot-gate": "depot"}
CAMERAS = ("door", "till")
HQ = ("hq", "hq-secret")  # the central broker's own reader


class Device:
    """A ``lookout run`` of two still cameras (a photo each, looped as a time-lapse at the
    rate it detects: the counts hold still, so the fleet's sum can be compared at any
    moment, and the detector keeps up)."""

    def __init__(self, name: str, broker: Broker, folder: Path, token: Path) -> None:
        self.name = name
        self.port = free_port()
        self.log = folder / f"{name}.log"
        photos = {"door": data_file("messi5.jpg"), "till": REPO_ROOT / "models/check/vtest_300.jpg"}
        args = [
            "run", "--device-id", name, "--model", "local", "--mqtt", broker.url,
            "--http", f"127.0.0.1:{self.port}", "--http-token-file", str(token),
            "--loop", "--timelapse", "--folder-fps", "2", "--detect-fps", "2",
            "--line", "door:post=0.5,0.1,0.5,0.9",
            "--zone", "till:queue=0.1,0.1,0.9,0.1,0.9,0.9,0.1,0.9",
        ]  # fmt: skip
        for camera in CAMERAS:
            (folder / name / camera).mkdir(parents=True)
            # Ten frames of one photo: a pass of 5 s, not a cut at every frame (a cut ends
            # the tracks, and a rate measured across cuts says nothing).
            for k in range(10):
                shutil.copy(photos[camera], folder / name / camera / f"{k:02d}.jpg")
            args += ["--source", f"{camera}={folder / name / camera}"]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [*LOOKOUT, *args], cwd=REPO_ROOT, env=offline_env(), stdout=log, stderr=log
            )

    def state(self) -> dict[str, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/state",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            return dict(json.loads(answer.read()))

    def counts(self) -> dict[str, int | None]:
        try:
            cameras = self.state()["cameras"]
        except OSError:
            return {}
        return {name: camera["count"] for name, camera in cameras.items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def tools() -> tuple[Path, Path, Path]:
    return (
        need_tool(mosquitto_path(), "mosquitto", "mosquitto"),
        need_tool(prometheus_path(), "prometheus", "prometheus"),
        need_tool(promtool_path(), "promtool", "prometheus"),
    )


def test_the_shipped_prometheus_files_check(tools: tuple[Path, Path, Path], tmp_path: Path) -> None:
    promtool = tools[2]
    token = tmp_path / "token"
    token.write_text(TOKEN)
    config = local_config(tmp_path, token)
    (tmp_path / "targets-example.json").write_text((FLEET / "lookout-targets.json").read_text())
    for args in (
        ["check", "config", str(config)],
        ["check", "rules", str(FLEET / "lookout-rules.yml")],
        # Each alert at its shipped `for:`, over a device's series minute by minute.
        ["test", "rules", str(FLEET / "lookout-rules.test.yml")],
    ):
        done = subprocess.run(
            [str(promtool), *args], capture_output=True, text=True, check=False, cwd=FLEET
        )
        assert done.returncode == 0, done.stdout + done.stderr
    # The shipped file as it stands refers only to /etc/prometheus (the paths the test made local).
    shipped = (FLEET / "prometheus.yml").read_text()
    assert "/etc/prometheus/lookout-token" in shipped and "lookout-rules.yml" in shipped


@pytest.fixture
def fleet(
    tools: tuple[Path, Path, Path], tmp_path: Path
) -> Iterator[tuple[Broker, Prometheus, dict[str, Device]]]:
    mosquitto, prometheus, _ = tools
    (tmp_path / "broker").mkdir()
    broker = Broker(mosquitto, tmp_path / "broker")
    broker.start()
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    devices = {name: Device(name, broker, tmp_path, token) for name in DEVICES}
    targets = [
        {"targets": [f"127.0.0.1:{d.port}"], "labels": {"device": name, "site": SITES[name]}}
        for name, d in devices.items()
    ]
    (tmp_path / "targets-fleet.json").write_text(json.dumps(targets))
    server = Prometheus(prometheus, local_config(tmp_path, token), tmp_path)
    server.start()
    try:
        yield broker, server, devices
    finally:
        for device in devices.values():
            device.stop()
        server.stop()
        broker.stop()


def test_three_devices_of_two_cameras_on_one_broker_and_one_prometheus(
    fleet: tuple[Broker, Prometheus, dict[str, Device]],
) -> None:
    broker, prom, devices = fleet
    started = time.monotonic()

    def all_counting() -> bool:
        for device in devices.values():
            if device.process.poll() is not None:
                raise AssertionError(f"{device.name} exited: {device.log.read_text()[-3000:]}")
        known = [c for d in devices.values() for c in d.counts().values() if c is not None]
        series = prom.query("lookout_people")
        return len(known) == 6 and len(series) == 6

    wait_until(all_counting, 90, "every device's two cameras counting, in Prometheus too")

    # Every camera of every device, with its device, site and camera labels.
    series = prom.query("lookout_people")
    labels = {(s["metric"]["device"], s["metric"]["site"], s["metric"]["camera"]) for s in series}
    assert labels == {(d, SITES[d], c) for d in DEVICES for c in CAMERAS}

    # The fleet's people from PromQL equal the sum of the devices' own /api/state (still
    # scenes: the counts hold, so the two reads are of one moment).
    by_api = sum(c or 0 for d in devices.values() for c in d.counts().values())
    assert by_api > 0
    wait_until(lambda: prom.query("sum(lookout_people)") != [], 10, "the sum")
    assert float(prom.query("sum(lookout_people)")[0]["value"][1]) == by_api

    # The counts held still all along (still photos), so the two reads were of one moment.
    assert prom.query("changes(lookout_people[1h]) > 0") == []

    def per_site() -> dict[str, float]:
        found = prom.query("site:lookout_people:sum")
        return {s["metric"]["site"]: float(s["value"][1]) for s in found}

    # The recorded sum per site catches up within an evaluation or two.
    wait_until(lambda: set(per_site()) == {"shop", "depot"}, 30, "the rule over both sites")
    wait_until(lambda: sum(per_site().values()) == by_api, 30, "the sites' sum")

    # Every recording and alert rule evaluates without error; every recorded series has data.
    def rules_ran() -> bool:
        groups = prom.api("rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return len(rules) == shipped_rules and all(
            r.get("lastEvaluation", "").startswith("20") for r in rules
        )

    rules_text = (FLEET / "lookout-rules.yml").read_text()
    shipped_rules = len(re.findall(r"^\s*- (?:record|alert):", rules_text, re.M))
    wait_until(rules_ran, 30, "every rule evaluated")
    # An alert's expression answers nothing while all is well: each series it reads must
    # exist all the same (a misspelt metric would never fire).
    exprs = " ".join(re.findall(r"^\s*expr: (.*)$", rules_text, re.M))
    read = set(re.findall(r"(?<![\w:])(lookout_[a-z_]+|up)(?![\w:])", exprs))
    for name in sorted(read):
        assert prom.query(f'count({name}{{job="lookout"}})') != [], name
    # The fleet's devices are each labelled with their own ids: no id alert, false or not.
    # No alert at all while every device is well, pending ones included (a device scraped
    # before its page answered is pending down until the next evaluation).
    wait_until(lambda: prom.api("alerts")["alerts"] == [], 15, "no alert in a well fleet")
    for group in prom.api("rules")["groups"]:
        for rule in group["rules"]:
            assert rule["health"] == "ok", rule
            if rule["type"] == "recording":
                wait_until(lambda r=rule: prom.query(r["name"]) != [], 30, f"{rule['name']} data")

    # Every query of the shipped dashboard, its variables set as a user would (All, then one
    # device), returns data.
    dashboard = json.loads((FLEET / "lookout-fleet-dashboard.json").read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert set(prom.label_values(variables["site"]["query"]["query"])) == {"shop", "depot"}
    devices_of = variables["device"]["query"]["query"].replace("$site", ".*")
    assert set(prom.label_values(devices_of)) == set(DEVICES)
    cameras_of = (
        variables["camera"]["query"]["query"].replace("$site", ".*").replace("$device", ".*")
    )
    assert set(prom.label_values(cameras_of)) == set(CAMERAS)
    answered = 0
    settings = (
        {"site": ".*", "device": ".*", "camera": ".*"},  # All (the variables' allValue)
        {"site": "shop", "device": "shop-till", "camera": ".*"},  # one device
        # several ticked: Grafana sends a multi-value variable as (a|b)
        {"site": "(shop|depot)", "device": "(shop-door|depot-gate)", "camera": "(door|till)"},
    )
    for values in settings:
        for expr in dashboard_queries(dashboard, values):
            wait_until(lambda e=expr: prom.query(e) != [], 30, f"data for {expr}")
            answered += 1
    assert answered == len(settings) * 15  # every target of the 10 panels, each setting

    # kill -9 one device: only its sensors go unavailable on MQTT (the broker's last will),
    # its `up` goes to 0 and its alert is pending; the others carry on.
    seen = Subscriber(broker.port, ["lookout/#", "homeassistant/#"])
    try:
        entities = home_assistant_entities(seen)
        everyone = {d: "available" for d in DEVICES}
        wait_until(lambda: availability(seen, entities) == everyone, 10, "all available")
        gone = devices["shop-till"]
        gone.process.send_signal(signal.SIGKILL)
        gone.process.wait(10)
        wait_until(
            lambda: seen.latest().get("lookout/shop-till/state") == b"offline", 60, "its will"
        )
        assert availability(seen, entities) == {
            "shop-door": "available", "shop-till": "unavailable", "depot-gate": "available"
        }  # fmt: skip
    finally:
        seen.close()

    def up(device: str) -> float | None:
        found = prom.query(f'up{{job="lookout",device="{device}"}}')
        return float(found[0]["value"][1]) if found else None

    wait_until(lambda: up("shop-till") == 0, 30, "up 0 for the killed device")
    assert up("shop-door") == 1 and up("depot-gate") == 1

    def pending() -> list[dict[str, Any]]:
        return [
            a
            for a in prom.api("alerts")["alerts"]
            if a["labels"]["alertname"] == "LookoutDeviceDown"
        ]

    wait_until(lambda: len(pending()) == 1, 30, "LookoutDeviceDown pending")
    (alert,) = pending()
    assert alert["state"] == "pending" and alert["labels"]["device"] == "shop-till"
    series_count = len(prom.query('{job="lookout"}'))
    print(
        f"fleet: {len(DEVICES)} devices x {len(CAMERAS)} cameras, {series_count} series, "
        f"{answered} dashboard queries answered, {shipped_rules} rules evaluated ok, "
        f"{len(entities)} Home Assistant entities, {time.monotonic() - started:.0f} s"
    )


def home_assistant_entities(seen: Subscriber) -> dict[str, dict[str, Any]]:
    """Every device's discovery configs on the broker (by unique id), once each device has
    the entities of both its cameras: unique ids, names and availability per device."""

    def configs() -> list[dict[str, Any]]:
        found = [
            json.loads(payload)
            for topic, payload in list(seen.latest().items())
            if topic.startswith("homeassistant/") and topic.endswith("/config") and payload
        ]
        return found

    def complete() -> bool:
        names = {c["device"]["name"] for c in configs() if c.get("name") == "People"}
        return names == {f"Lookout {d} {c}" for d in DEVICES for c in CAMERAS}

    wait_until(complete, 30, "every camera's Home Assistant entities")
    found = configs()
    unique_ids = [c["unique_id"] for c in found]
    assert len(set(unique_ids)) == len(unique_ids)  # never two entities with one id
    entities = {}
    for config in found:
        device = config["device"]
        owner = next(d for d in DEVICES if config["unique_id"].startswith(f"lookout_{d}_"))
        # A camera is a Home Assistant device of its own, linked to its Lookout device.
        assert device["name"] in {f"Lookout {owner}", *(f"Lookout {owner} {c}" for c in CAMERAS)}
        topics = [a["topic"] for a in config.get("availability", [])]
        assert all(t.startswith(f"lookout/{owner}/") for t in topics), config
        entities[config["unique_id"]] = {**config, "owner": owner, "availability": topics}
    return entities


def availability(seen: Subscriber, entities: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Per device, what Home Assistant shows its entities as (by their availability topics,
    every one of which must say online): all available, all unavailable, or mixed."""
    shown: dict[str, set[bool]] = {}
    for entity in entities.values():
        topics = entity["availability"]
        if not topics:  # the device's own Online entity: never unavailable, it reads state
            continue
        ok = all(seen.latest().get(t) == entity["payload_available"].encode() for t in topics)
        shown.setdefault(entity["owner"], set()).add(ok)
    names = {frozenset({True}): "available", frozenset({False}): "unavailable"}
    return {d: names.get(frozenset(v), "mixed") for d, v in shown.items()}


def bridge_config(central_port: int, user: str, password: str) -> str:
    """The shipped bridge, pointed at the test's central broker (no TLS on loopback)."""
    text = (FLEET / "mosquitto-site-bridge.conf").read_text()
    text = text.replace("SITE", "shop").replace(
        "central.example.org:8883", f"127.0.0.1:{central_port}"
    )
    text = text.replace("CHANGE-ME", password).replace(
        "remote_username shop", f"remote_username {user}"
    )
    lines = [line for line in text.splitlines() if not line.startswith("bridge_cafile")]
    return "\n".join(lines) + "\n"


def test_a_site_bridged_to_the_central_broker_loses_nothing_qos_1_promised(
    tools: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    mosquitto = tools[0]
    (tmp_path / "central").mkdir()
    (tmp_path / "site").mkdir()
    central = Broker(
        mosquitto, tmp_path / "central", users={"shop": "site-secret", "hq": "hq-secret"}
    )
    central.start()
    site = Broker(mosquitto, tmp_path / "site")
    with open(site.config, "a") as conf:
        conf.write(bridge_config(central.port, "shop", "site-secret"))
    site.start()
    token = tmp_path / "token"
    token.write_text(TOKEN)
    device: Device | None = None
    watcher = Subscriber(
        central.port, ["lookout/#"], client_id="central-watcher", persistent=True, login=HQ
    )
    try:
        wait_until(
            lambda: watcher.latest().get("lookout/bridge/shop/state") == b"1", 20, "the bridge"
        )
        device = Device("shop-door", site, tmp_path, token)
        wait_until(
            lambda: watcher.latest().get("lookout/shop-door/state") == b"online", 60,
            "the site's device seen on the central broker",
        )  # fmt: skip
        wait_until(lambda: "lookout/shop-door/door/count" in watcher.latest(), 30, "its count")
        # While the central broker is away, the site goes on publishing at QoS 1; once it is
        # back, everything reaches the central broker's persistent subscriber.
        watcher.close()
        central.stop()
        publisher = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="site-sender")
        publisher.connect("127.0.0.1", site.port)
        publisher.loop_start()
        sent = [publisher.publish("lookout/shop-door/test/seq", str(k), qos=1) for k in range(50)]
        for info in sent:
            info.wait_for_publish(10)
        central.start()
        again = Subscriber(
            central.port, ["lookout/#"], client_id="central-watcher", persistent=True, login=HQ
        )
        wait_until(
            lambda: len(again.on("lookout/shop-door/test/seq")) >= 50, 60,
            "the 50 messages sent while the central broker was away",
        )  # fmt: skip
        got = [int(m.payload) for m in again.on("lookout/shop-door/test/seq")]
        assert sorted(set(got)) == list(range(50))
        again.close()
        publisher.loop_stop()
        publisher.disconnect()
    finally:
        if device is not None:
            device.stop()
        site.stop()
        central.stop()
