"""Where the status server is: ``--http`` parsed once into an address, and its own URLs."""

from __future__ import annotations

from dataclasses import dataclass

from device.config import ConfigError
from device.outputs.host_check import is_loopback


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


def parse_http(spec: str) -> HttpAddress:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` (all interfaces) or ``PORT`` (loopback)."""
    text = spec.strip()
    host: str
    if text.isdigit():
        host, port_text = "127.0.0.1", text
    elif text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ConfigError(f"http: expected HOST:PORT, not {spec!r}")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ConfigError(f"http: expected HOST:PORT (IPv6 as [ADDR]:PORT), not {spec!r}")
        host = host or "0.0.0.0"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"http: port must be 0..65535, not {port_text!r}")
    return HttpAddress(host, int(port_text))


def same_site(path: str, query: dict[str, str]) -> str:
    """A redirect target on this site: a path, never ``//host`` or ``/\\host``."""
    from yarl import URL

    clean = "/" + path.lstrip("/\\")
    return str(URL.build(path=clean, query=query))


__all__ = ["HttpAddress", "parse_http", "same_site"]
