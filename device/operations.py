"""Wiring of the operations features (status server, metrics, MQTT) into an App.

``attach_operations(app)`` is what the CLI calls once the App is built and
before it runs. Problems a user can cause (a bad ``--http`` or ``--mqtt``
value, a taken port, a device id that cannot name MQTT topics) raise
``ConfigError`` with one line, before anything has started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from device.app import App
from device.mqtt import MqttPublisher, parse_mqtt
from device.status_server import StatusServer, parse_http
from device.telemetry import Telemetry


@dataclass
class Operations:
    telemetry: Telemetry | None = None
    server: StatusServer | None = None
    mqtt: MqttPublisher | None = None


def _version() -> str:
    try:
        return metadata.version("lookout")
    except metadata.PackageNotFoundError:
        return ""


def _printer(app: App) -> Callable[[str], None]:
    def announce(line: str) -> None:
        app.out.write(line + "\n")
        app.out.flush()

    return announce


def setup_operations(app: App) -> Operations:
    """Add the services, sinks and observers that ``app.config`` asks for; return them."""
    config = app.config
    ops = Operations()
    secrets = list(config.secrets())
    mqtt_settings = parse_mqtt(config.mqtt) if config.mqtt else None
    if mqtt_settings is not None and mqtt_settings.password:
        secrets.append(mqtt_settings.password)
    if config.http:
        ops.telemetry = Telemetry(app)
        ops.server = StatusServer(
            ops.telemetry,
            parse_http(config.http),
            token=config.http_token,
            secrets=tuple(secrets),
            announce=_printer(app),
        )
    if mqtt_settings is not None:
        ops.mqtt = MqttPublisher(
            mqtt_settings,
            device_id=config.device_id,
            model=config.model_name(),
            version=_version(),
        )
    # Bind last: every check that can fail has passed, so no socket is left open.
    if ops.server is not None:
        ops.server.listen()
    if ops.telemetry is not None:
        telemetry = ops.telemetry
        # App copies extra_sinks into app.sinks when it is built, so join app.sinks.
        app.sinks.append(telemetry)
        app.observers.append(telemetry.on_frame_result)
        app.frame_observers.append(telemetry.on_encoded_frame)
        telemetry.mqtt = ops.mqtt
    if ops.mqtt is not None:
        app.sinks.append(ops.mqtt)
        app.services.append(ops.mqtt)
    if ops.server is not None:
        app.services.append(ops.server)
    return ops


def attach_operations(app: App) -> None:
    """Status server (unless ``config.http`` is empty), metrics and MQTT, per app.config."""
    setup_operations(app)


__all__ = ["Operations", "attach_operations", "setup_operations"]
