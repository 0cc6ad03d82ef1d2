"""Wiring of the operations outputs (status server, metrics, MQTT) onto an App's bus.

``attach_operations(app)`` is what the CLI calls once the App is built and
before it runs: each output subscribes to the bus the app was given, and the
ones that run (server, MQTT connection) join its services. Problems a user
can cause (a bad ``--http`` or ``--mqtt`` value, a taken port, a device id
that cannot name MQTT topics) raise ``ConfigError`` with one line, before
anything has started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from device.app.config import ConfigError
from device.app.run import App
from device.outputs.host_check import parse_hosts
from device.outputs.mqtt import MqttPublisher
from device.outputs.mqtt_settings import parse_mqtt
from device.outputs.status_server import StatusServer, parse_http
from device.outputs.telemetry import Telemetry

DEFAULT_HTTP = "127.0.0.1:8765"


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
        address = parse_http(config.http)
        if not address.loopback and not config.http_token and not config.http_insecure:
            raise ConfigError(
                f"status server: --http {address} is reachable from the network: set a token "
                "(--http-token-file FILE or LOOKOUT_HTTP_TOKEN), or pass --http-insecure"
            )
        ops.telemetry = Telemetry(app)
        ops.server = StatusServer(
            ops.telemetry,
            address,
            token=config.http_token,
            secrets=tuple(secrets),
            announce=_printer(app),
            hosts=parse_hosts(config.http_hosts),
        )
    if mqtt_settings is not None:
        ops.mqtt = MqttPublisher(
            mqtt_settings,
            device_id=config.device_id,
            model=config.model_name(),
            version=_version(),
            clock=app.clock,
            announce=_printer(app),
        )
    # Bind last: every check that can fail has passed, so no socket is left open.
    if ops.server is not None:
        if config.http != DEFAULT_HTTP:
            ops.server.listen()  # an address the user chose: taken is their error (exit 2)
        else:
            try:
                ops.server.listen(fallback_ports=10)
            except ConfigError as exc:
                # The page is a convenience; counting, logs and MQTT go on without it.
                _printer(app)(f"warning: {exc}; running without the status page")
                ops.server = None
    bus = app.bus
    assert bus is not None
    if ops.telemetry is not None:
        bus.subscribe(ops.telemetry)
        bus.on_percept(ops.telemetry.on_percept)
        ops.telemetry.mqtt = ops.mqtt
    if ops.mqtt is not None:
        bus.subscribe(ops.mqtt)
        app.services.append(ops.mqtt)
        # Events that never reached the broker make the run incomplete, like a log's.
        app.delivery_checks.append(ops.mqtt.undelivered)
    if ops.server is not None:
        app.services.append(ops.server)
    return ops


def attach_operations(app: App) -> None:
    """Status server (unless ``config.http`` is empty), metrics and MQTT, per app.config."""
    setup_operations(app)


__all__ = ["Operations", "attach_operations", "setup_operations"]
