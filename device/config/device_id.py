"""The default device id: the host name and a suffix of this machine's own, stable across runs.

The id names the device's MQTT topics and Home Assistant entities, so two devices
must never share one, and one device must keep its id across restarts. The host
name alone does neither well: every Raspberry Pi is called ``raspberrypi``, and
two devices with one id knock each other off the broker. So the host name gets
a short suffix derived from what identifies this machine:

1. ``/etc/machine-id`` (systemd; ``/var/lib/dbus/machine-id`` on older systems),
   hashed with a key of our own (the raw id is meant to stay private);
2. else an id generated once and kept in ``state_dir()/device-suffix``
   (``/var/lib/lookout`` under the installed service, else ``~/.local/state/lookout``);
3. else (no machine id, nowhere to keep one) the network card's address, when it
   is a real one;
4. else the host name alone (said in the log).

``--device-id`` (``device_id`` in the config file) overrides all of this.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import socket
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger("lookout.config")

MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
SUFFIX_LENGTH = 6  # hex digits: a fleet of 100 shares one with odds of 1 in 3,000
_SUFFIX = re.compile(r"[0-9a-f]{6}")
_KEY = b"lookout device id\0"


def host_part(hostname: str) -> str:
    """The host name as a topic-safe id (lower case; letters, digits, - and _)."""
    cleaned = "".join(
        c if (c.isascii() and c.isalnum()) or c in "-_" else "-" for c in hostname.lower()
    )
    return cleaned.strip("-") or "lookout"


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """Where the device's identity is kept: systemd's ``StateDirectory=`` under the
    installed service (``/var/lib/lookout``: its home is read-only there), else
    ``$XDG_STATE_HOME/lookout`` (``~/.local/state/lookout``)."""
    env = os.environ if environ is None else environ
    service = env.get("STATE_DIRECTORY", "").split(":")[0]
    if service:
        return Path(service)
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "lookout"


def _hashed(secret: bytes) -> str:
    return hashlib.sha256(_KEY + secret).hexdigest()[:SUFFIX_LENGTH]


def _read_id(path: Path) -> str:
    """An id file's text; ``OSError`` for one that is not a small regular file (a pipe
    there would hang every start)."""
    # In here: the configuration loads nothing outside itself when imported.
    from device.files.input_file import SMALL_MAX, read_input

    return read_input(path, SMALL_MAX).decode("utf-8", "replace").strip()


def machine_suffix(files: Sequence[Path] = MACHINE_ID_FILES) -> str | None:
    for path in files:
        try:
            text = _read_id(path)
        except OSError:
            continue
        if text:
            return _hashed(text.encode())
    return None


def _kept(path: Path) -> str | None:
    try:
        text = _read_id(path)
    except OSError:
        return None
    return text if _SUFFIX.fullmatch(text) else None


def stored_suffix(directory: Path) -> str | None:
    """The suffix kept in ``directory`` (made and kept there the first time)."""
    path = directory / "device-suffix"
    suffix = _kept(path)
    if suffix is not None:
        return suffix
    suffix = secrets.token_hex(SUFFIX_LENGTH // 2)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # In here: the configuration loads nothing outside itself when imported.
        from device.files.whole_file import write_whole

        # Whole (a torn file would change the id), and only where none is: two devices
        # starting at once on one machine keep the first one's, not one each (an
        # unreadable one is replaced).
        new = not os.path.lexists(path)
        write_whole(path, (suffix + "\n").encode(), exclusive=new, sync=True)
    except FileExistsError:
        return _kept(path)
    except OSError as exc:
        log.info("cannot keep a device id suffix in %s: %s", directory, exc)
        return None
    return suffix


def hardware_suffix(getnode: Callable[[], int] = uuid.getnode) -> str | None:
    node = getnode()
    if node >> 40 & 1:
        return None  # the multicast bit: Python made it up, and it changes at each start
    return _hashed(node.to_bytes(6, "big"))


SYS_NET = Path("/sys/class/net")


def network_cards(sys_net: Path = SYS_NET) -> list[str]:
    """This machine's network cards, each hashed: every interface with a device behind it
    (Ethernet, Wi-Fi; not ``lo``, bridges or tunnels), whether or not it is up. All of
    them, not one: which one ``uuid.getnode()`` reports changes with which has an address
    (a Pi on Wi-Fi today, on its cable tomorrow), and a warning that came and went with
    it would be a false alarm."""
    cards = []
    try:
        interfaces = sorted(sys_net.iterdir())
    except OSError:
        return []
    for interface in interfaces:
        try:
            if not (interface / "device").exists():
                continue
            address = (interface / "address").read_text().strip().lower()
        except OSError:
            continue
        try:
            mac = bytes.fromhex(address.replace(":", ""))
        except ValueError:
            continue
        if len(mac) == 6 and any(mac):
            cards.append(_hashed(mac))  # as hardware_suffix hashes uuid.getnode()'s
    return cards


def cloned_from(machine: str, hardware: Sequence[str], directory: Path) -> bool:
    """Whether this machine id was first seen with other hardware: a cloned SD card.

    The first start keeps ``<machine suffix> <card> ...`` (hashed) in ``directory``; an
    image copied to another Pi brings the file and the machine id along, but not the
    network cards, so there none of them is one kept. A card added since (a USB Wi-Fi
    stick) while one kept is still there is kept too. A machine id made anew (or no
    network card to tell by) starts over, silently.
    """
    if not hardware:
        return False
    path = directory / "machine-hardware"
    try:
        kept = _read_id(path).split()
    except OSError:
        kept = []
    if len(kept) >= 2 and kept[0] == machine:
        if not set(kept[1:]) & set(hardware):
            return True
        if set(hardware) <= set(kept[1:]):
            return False
        hardware = sorted(set(kept[1:]) | set(hardware))
    try:
        from device.files.whole_file import write_whole

        directory.mkdir(parents=True, exist_ok=True)
        write_whole(path, (" ".join([machine, *hardware]) + "\n").encode(), sync=True)
    except OSError as exc:
        log.info("cannot keep this machine's identity in %s: %s", directory, exc)
    return False


# The default ids this process derived from a machine id found cloned (said at start by
# ``cloned_card``, only when the run goes by that id: one given by --device-id is fine).
_CLONED: dict[str, Path] = {}


def default_device_id(
    hostname: str | None = None,
    *,
    machine_id_files: Sequence[Path] = MACHINE_ID_FILES,
    directory: Path | None = None,
    getnode: Callable[[], int] = uuid.getnode,
    cards: Callable[[], list[str]] = network_cards,
) -> str:
    """``<host>-<suffix>``: unique to this machine, the same at every start."""
    host = host_part(socket.gethostname() if hostname is None else hostname)
    folder = state_dir() if directory is None else directory
    machine = machine_suffix(machine_id_files)
    if machine is not None:
        hardware = cards() or [h for h in [hardware_suffix(getnode)] if h is not None]
        if cloned_from(machine, hardware, folder):
            _CLONED[f"{host}-{machine}"] = folder / "machine-hardware"
        else:
            _CLONED.pop(f"{host}-{machine}", None)
    suffix = machine or stored_suffix(folder) or hardware_suffix(getnode)
    if suffix is None:
        log.warning(
            "no machine id and nowhere to keep one: the device id is the host name %r "
            "(give each device its own --device-id)",
            host,
        )
        return host
    return f"{host}-{suffix}"


def cloned_card(device_id: str) -> str | None:
    """What to say at start when ``device_id`` (the one the run goes by) was derived from a
    machine id first seen on other network cards: an SD card cloned from another device,
    whose twin would publish as the same device."""
    kept = _CLONED.get(device_id)
    if kept is None:
        return None
    return (
        f"this system's machine id was made on another machine (an SD card cloned from "
        f"another device?): both would be device '{device_id}'. Give this one its own "
        f"device_id (--device-id, or device_id in [device]), or a new machine id (sudo rm "
        f"/etc/machine-id && sudo systemd-machine-id-setup), then restart. (Only the "
        f"network card was replaced? Remove {kept} and restart.)"
    )


__all__ = [
    "cloned_card", "cloned_from", "default_device_id", "host_part", "machine_suffix",
    "network_cards", "state_dir", "stored_suffix",
]  # fmt: skip
