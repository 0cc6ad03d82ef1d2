"""Where the status server is: ``--http`` parsed once into an address, its socket bound,
and its own URLs."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

from device.config import ConfigError
from device.config.urls import split_http
from device.outputs.page.host_check import is_loopback


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, port: int) -> str:
        """The page's address on ``port`` (all interfaces: this machine's loopback)."""
        host = self.host
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


def parse_http(spec: str) -> HttpAddress:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` (all interfaces) or ``PORT`` (loopback)."""
    try:
        return HttpAddress(*split_http(spec))
    except ValueError as exc:
        raise ConfigError(f"http: {exc}") from None


def bind(address: HttpAddress, *, fallback_ports: int = 0, given_as: str = "") -> socket.socket:
    """The server's socket, bound now, so that a taken port fails before the app starts.

    ``fallback_ports``: for the default address, a port in use is no reason to
    stop a device; the next free one of that many is taken instead (and said).
    ``given_as``: how the user gave the address (``--http``), named when it fails.
    """
    host = address.host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    port = address.port
    while True:
        try:
            return socket.create_server((host, port), family=family, backlog=1024)
        except OSError as exc:
            in_use = exc.errno == errno.EADDRINUSE
            if in_use and port < address.port + fallback_ports and port:
                port += 1
                continue
            reason = exc.strerror or str(exc)
            if in_use:
                reason = "the address is in use by another program"
            source = f" ({given_as})" if given_as else ""
            raise ConfigError(
                f"status server: cannot listen on {address}{source}: {reason}"
            ) from None


def same_site(path: str, query: dict[str, str]) -> str:
    """A redirect target on this site: a path, never ``//host`` or ``/\\host``."""
    from yarl import URL

    clean = "/" + path.lstrip("/\\")
    return str(URL.build(path=clean, query=query))


__all__ = ["HttpAddress", "bind", "parse_http", "same_site"]
