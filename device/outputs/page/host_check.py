"""Which ``Host`` headers the status server answers: the defence against DNS rebinding.

A page on ``evil.example`` whose name is made to resolve to the device sends
``Host: evil.example``; the browser's same-origin rule then lets it read the
answers. So a request is served only when its Host names this device:

- on a loopback bind, only loopback names and addresses;
- on any other bind, an IP address literal (a rebinding attack always comes
  with a *name*: a page served from an IP address can only talk to that address
  anyway), a loopback name, one of the machine's own names (its host name, that
  name with ``.local``, its fully qualified name), or a name the user listed
  (``--http-hosts``, e.g. the name of a reverse proxy in front of it).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field


def split_host(value: str) -> str:
    """The host part of a Host header (no port, no IPv6 brackets), lower case."""
    host = value.strip()
    if host.startswith("["):
        end = host.find("]")
        host = host[1:end] if end > 0 else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".").lower()


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: we cannot know where it resolves, so assume the network


def own_names() -> set[str]:
    """The names this machine answers to on a LAN: its host name and ``<name>.local``.

    No DNS lookup (``getfqdn`` can hang for seconds on a device without a network);
    other names are listed with ``--http-hosts``.
    """
    host = socket.gethostname().rstrip(".").lower()
    if not host:
        return set()
    short = host.split(".", 1)[0]
    return {host, short, f"{short}.local"}


@dataclass(frozen=True)
class HostPolicy:
    loopback_only: bool
    names: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_bind(cls, loopback_bind: bool, extra: Iterable[str] = ()) -> HostPolicy:
        listed = {split_host(n) for n in extra if n.strip()}
        if loopback_bind:
            return cls(loopback_only=True, names=frozenset(listed))
        return cls(loopback_only=False, names=frozenset(own_names() | listed))

    def allows(self, header: str) -> bool:
        host = split_host(header)
        if not host:
            return False
        if is_loopback(host) or host in self.names:
            return True
        return not self.loopback_only and is_ip(host)


def parse_hosts(text: str) -> tuple[str, ...]:
    """``--http-hosts`` as given: comma-separated names."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


__all__ = ["HostPolicy", "is_loopback", "parse_hosts", "split_host"]
