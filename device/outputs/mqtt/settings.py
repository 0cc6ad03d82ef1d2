"""Where the MQTT broker is and what names may become topics: settings, checked once.

The URL's rules (what paho and the broker take) are the configuration's
(``device/config/urls.py``), so that a bad ``--mqtt`` is refused at start with the
setting's name; here they are read into ``MqttSettings`` for the publisher.
"""

from __future__ import annotations

from device.config.errors import ConfigError
from device.config.text import TOPIC_SAFE
from device.config.urls import MqttSettings, mqtt_settings


def parse_mqtt(url: str) -> MqttSettings:
    """``mqtt://[user[:password]@]host[:port]`` (1883) or ``mqtts://...`` (TLS, 8883)."""
    try:
        return mqtt_settings(url)
    except ValueError as exc:
        raise ConfigError(f"mqtt: {exc}") from None


def check_device_id(device_id: str) -> str:
    if not TOPIC_SAFE.fullmatch(device_id):
        raise ConfigError(
            f"device_id {device_id!r} cannot name MQTT topics: use letters, digits, - and _"
        )
    return device_id


def check_scene_name(kind: str, name: str) -> str:
    if not TOPIC_SAFE.fullmatch(name):
        raise ConfigError(f"{kind} {name!r} cannot name MQTT topics: use letters, digits, - and _")
    return name


__all__ = ["MqttSettings", "check_device_id", "check_scene_name", "parse_mqtt"]
