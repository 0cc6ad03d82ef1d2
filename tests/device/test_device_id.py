"""The default device id: unique per machine (every Pi is called raspberrypi), and stable."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from device.config import Config
from device.config.device_id import (
    cloned_card,
    default_device_id,
    hardware_suffix,
    host_part,
    network_cards,
    state_dir,
)
from device.outputs.mqtt.settings import check_device_id

REAL_MAC = 0x_B8_27_EB_12_34_56  # a Raspberry Pi's
MADE_UP_MAC = 0x_01_00_00_00_00_01  # multicast bit set: what Python invents without one


def machine(tmp_path: Path, name: str, machine_id: str | None) -> list[Path]:
    path = tmp_path / name / "machine-id"
    path.parent.mkdir(parents=True)
    if machine_id is not None:
        path.write_text(machine_id + "\n")
    return [path]


def test_two_pis_called_raspberrypi_get_two_ids_each_kept_across_restarts(tmp_path: Path) -> None:
    one = machine(tmp_path, "one", "3d1219c7c4c5404aaa1f6d2a48adfda4")
    two = machine(tmp_path, "two", "9f0e7a61b2c34d5e8f90a1b2c3d4e5f6")
    state = tmp_path / "state"
    first = default_device_id("raspberrypi", machine_id_files=one, directory=state)
    second = default_device_id("raspberrypi", machine_id_files=two, directory=state)
    assert first != second
    for device_id in (first, second):
        assert re.fullmatch(r"raspberrypi-[0-9a-f]{6}", device_id), device_id
        check_device_id(device_id)  # names MQTT topics
    # A restart: the same machine, the same id.
    assert default_device_id("raspberrypi", machine_id_files=one, directory=state) == first
    # The machine id itself never shows (it is meant to stay private).
    assert "3d1219" not in first
    # What is kept is hashed too (the card's check against cloning: the test below).
    assert [p.name for p in state.iterdir()] == ["machine-hardware"]
    assert "3d1219" not in (state / "machine-hardware").read_text()


def test_without_a_machine_id_a_suffix_is_made_once_and_kept(tmp_path: Path) -> None:
    none = machine(tmp_path, "bare", None)
    state_a, state_b = tmp_path / "a" / "lookout", tmp_path / "b" / "lookout"
    first = default_device_id("raspberrypi", machine_id_files=none, directory=state_a)
    assert re.fullmatch(r"raspberrypi-[0-9a-f]{6}", first), first
    assert default_device_id("raspberrypi", machine_id_files=none, directory=state_a) == first
    # Another machine (its own state) gets its own; chance of the same: 1 in 16 million.
    assert default_device_id("raspberrypi", machine_id_files=none, directory=state_b) != first


def test_nowhere_to_keep_one_falls_back_to_the_network_card_then_the_host(
    tmp_path: Path,
) -> None:
    none = machine(tmp_path, "bare", None)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    nowhere = blocked / "lookout"  # cannot be made: its parent is a file
    by_mac = default_device_id(
        "raspberrypi", machine_id_files=none, directory=nowhere, getnode=lambda: REAL_MAC
    )
    assert re.fullmatch(r"raspberrypi-[0-9a-f]{6}", by_mac)
    again = default_device_id(
        "raspberrypi", machine_id_files=none, directory=nowhere, getnode=lambda: REAL_MAC
    )
    assert again == by_mac
    # A made-up address changes at each start: the host name alone is steadier.
    bare = default_device_id(
        "raspberrypi", machine_id_files=none, directory=nowhere, getnode=lambda: MADE_UP_MAC
    )
    assert bare == "raspberrypi"


def test_any_host_name_becomes_an_id_that_names_topics() -> None:
    for host in ("Pi Kitchen.local", "CAFÉ-cam", "---", ""):
        check_device_id(host_part(host))
    assert host_part("Pi Kitchen.local") == "pi-kitchen-local"


def test_the_config_default_is_this_machine_s_unique_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine without a machine id keeps its suffix here, not in the user's home.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    device_id = Config().device.device_id
    host = host_part(socket.gethostname())
    assert re.fullmatch(rf"{re.escape(host)}-[0-9a-f]{{6}}", device_id), device_id
    assert Config().device.device_id == device_id  # the same at every start
    assert Config.of(device_id="hall-1").device.device_id == "hall-1"  # given: used as it is


def test_a_card_cloned_to_another_pi_is_said_at_start_with_what_to_do(tmp_path: Path) -> None:
    """Two Pis from one image share /etc/machine-id, so they would share an id: the clone
    is told (none of its network cards is one the machine id was first seen with), when it
    starts under that id; not when it is given one of its own."""
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123456789abcdef0123456789abcdef\n")
    card = tmp_path / "state"  # on the SD card: it is cloned with it
    first_pi, second_pi = (lambda: ["eth-1", "wlan-1"]), (lambda: ["eth-2", "wlan-2"])

    def start(cards: Callable[[], list[str]]) -> str:
        return default_device_id(
            "raspberrypi", machine_id_files=[machine_id], directory=card, cards=cards
        )

    original = start(first_pi)
    assert start(first_pi) == original and cloned_card(original) is None  # restarted: quiet
    clone = start(second_pi)
    assert clone == original  # the id cannot tell them apart: hence what is said
    said = cloned_card(clone)
    assert said is not None and "cloned" in said and f"'{original}'" in said
    assert "--device-id" in said and "systemd-machine-id-setup" in said
    assert str(card / "machine-hardware") in said  # a replaced network card: what to remove
    assert cloned_card("hall-1") is None  # the clone given its own id: nothing to say
    # Given a new machine id, the clone starts over, silently, with an id of its own.
    machine_id.write_text("fedcba9876543210fedcba9876543210\n")
    renewed = start(second_pi)
    assert renewed != original and cloned_card(renewed) is None


def test_a_network_card_coming_and_going_is_no_clone(tmp_path: Path) -> None:
    """Every card is kept, not the one uuid.getnode() happens to report: a Pi on Wi-Fi one
    day and on its cable the next, or given a USB Wi-Fi stick, is the same Pi."""
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123456789abcdef0123456789abcdef\n")
    card = tmp_path / "state"
    found = {"cards": ["eth", "wlan"]}

    def start() -> str:
        return default_device_id(
            "raspberrypi", machine_id_files=[machine_id], directory=card,
            cards=lambda: found["cards"],
        )  # fmt: skip

    first = start()
    for cards in (["wlan"], ["eth", "wlan", "usb-wifi"], ["usb-wifi"], ["eth"]):
        found["cards"] = cards
        assert start() == first and cloned_card(first) is None, cards


def test_network_cards_are_the_hardware_ones_hashed(tmp_path: Path) -> None:
    net = tmp_path / "net"
    for name, address, hardware in (
        ("eth0", "B8:27:EB:12:34:56", True),
        ("wlan0", "b8:27:eb:65:43:21", True),
        ("lo", "00:00:00:00:00:00", False),
        ("docker0", "02:42:ac:11:00:02", False),  # virtual: no device behind it
        ("usb0", "00:00:00:00:00:00", True),  # no address of its own
    ):
        (net / name).mkdir(parents=True)
        (net / name / "address").write_text(address + "\n")
        if hardware:
            (net / name / "device").mkdir()
    cards = network_cards(net)
    assert cards == [hardware_suffix(lambda: REAL_MAC), hardware_suffix(lambda: 0xB827EB654321)]
    assert "b827eb" not in "".join(cards)  # hashed, as the machine id is
    assert network_cards(tmp_path / "none") == []


def test_the_identity_is_kept_where_the_service_may_write() -> None:
    """The installed service's home is read-only (ProtectHome): systemd's StateDirectory."""
    assert state_dir({"STATE_DIRECTORY": "/var/lib/lookout", "HOME": "/home/pi"}) == Path(
        "/var/lib/lookout"
    )
    assert state_dir({"XDG_STATE_HOME": "/s"}) == Path("/s/lookout")
