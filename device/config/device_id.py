"""The default device id: the host name and a suffix of this machine's own, stable across runs.

The id names the device's MQTT topics and Home Assistant entities, so two devices
must never share one, and one device must keep its id across restarts. The host
name alone does neither well: every Raspberry Pi is called ``raspberrypi``, and
two devices with one id knock each other off the broker. So the host name gets
a short suffix derived from what identifies this machine:

1. ``/etc/machine-id`` (systemd; ``/var/lib/dbus/machine-id`` on older systems),
   hashed with a key of our own (the raw id is meant to stay private);
2. else an id generated once and kept in ``$XDG_STATE_HOME/lookout/device-suffix``
   (``~/.local/state/...``);
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
    env = os.environ if environ is None else environ
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


def cloned_from(machine: str, hardware: str | None, directory: Path) -> bool:
    """Whether this machine id was first seen with other hardware: a cloned SD card.

    The first start keeps ``<machine suffix> <hardware suffix>`` in ``directory``; an
    image copied to another Pi brings the file and the machine id along, but not the
    network card, so there the pair no longer matches. A machine id made anew (or no
    network card to tell by) starts over, silently.
    """
    if hardware is None:
        return False
    path = directory / "machine-hardware"
    try:
        kept = _read_id(path).split()
    except OSError:
        kept = []
    if len(kept) == 2 and kept[0] == machine:
        return kept[1] != hardware
    try:
        from device.files.whole_file import write_whole

        directory.mkdir(parents=True, exist_ok=True)
        write_whole(path, f"{machine} {hardware}\n".encode(), sync=True)
    except OSError as exc:
        log.info("cannot keep this machine's identity in %s: %s", directory, exc)
    return False


def default_device_id(
    hostname: str | None = None,
    *,
    machine_id_files: Sequence[Path] = MACHINE_ID_FILES,
    directory: Path | None = None,
    getnode: Callable[[], int] = uuid.getnode,
) -> str:
    """``<host>-<suffix>``: unique to this machine, the same at every start."""
    host = host_part(socket.gethostname() if hostname is None else hostname)
    folder = state_dir() if directory is None else directory
    machine = machine_suffix(machine_id_files)
    if machine is not None and cloned_from(machine, hardware_suffix(getnode), folder):
        log.warning(
            "this system's machine id was made on another machine (an SD card cloned from "
            "another device?): both would be device '%s-%s'. Give this one its own device_id "
            "(--device-id), or a new machine id (sudo rm /etc/machine-id && sudo "
            "systemd-machine-id-setup), then restart",
            host,
            machine,
        )
    suffix = machine or stored_suffix(folder) or hardware_suffix(getnode)
    if suffix is None:
        log.warning(
            "no machine id and nowhere to keep one: the device id is the host name %r "
            "(give each device its own --device-id)",
            host,
        )
        return host
    return f"{host}-{suffix}"


__all__ = [
    "cloned_from", "default_device_id", "host_part", "machine_suffix", "state_dir", "stored_suffix",
]  # fmt: skip
