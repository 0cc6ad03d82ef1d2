"""Where the MQTT broker is and what names may become topics: settings, checked once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from device.config.errors import ConfigError
from live.redact import safe_url

_TOPIC_SAFE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class MqttSettings:
    host: str
    port: int = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        scheme = "mqtts" if self.tls else "mqtt"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def parse_mqtt(url: str) -> MqttSettings:
    """``mqtt://[user[:password]@]host[:port]`` (1883) or ``mqtts://...`` (TLS, 8883)."""
    shown = safe_url(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ConfigError(f"mqtt: expected mqtt://host[:port], not {shown!r}") from None
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ConfigError(f"mqtt: expected mqtt://host[:port] or mqtts://..., not {shown!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"mqtt: the URL takes no path or query: {shown!r}")
    tls = parts.scheme == "mqtts"
    return MqttSettings(
        host=parts.hostname,
        port=port if port is not None else (8883 if tls else 1883),
        tls=tls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def check_device_id(device_id: str) -> str:
    if not _TOPIC_SAFE.fullmatch(device_id):
        raise ConfigError(
            f"device_id {device_id!r} cannot name MQTT topics: use letters, digits, - and _"
        )
    return device_id


def check_scene_name(kind: str, name: str) -> str:
    if not _TOPIC_SAFE.fullmatch(name):
        raise ConfigError(f"{kind} {name!r} cannot name MQTT topics: use letters, digits, - and _")
    return name


__all__ = ["MqttSettings", "check_device_id", "check_scene_name", "parse_mqtt"]
