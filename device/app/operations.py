"""The operations outputs (status server, metrics, MQTT), built from the configuration.

``build_operations`` is called by the wiring once the device's parts exist and
before anything runs: each output is made with what it shows from (the bus it
subscribes to, the device's read-only view) and the ones that run (server,
MQTT connection) are the run's services. Problems a user can cause (a bad
``--http`` or ``--mqtt`` value, a taken port, a device id or a line or zone
name that cannot name MQTT topics) raise ``ConfigError`` with one line, before
anything has started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Protocol

from anyio.abc import TaskStatus

from device.bus import EventBus
from device.config import Config, ConfigError
from device.outputs.mqtt.camera import CameraScene
from device.outputs.mqtt.settings import parse_mqtt
from device.outputs.page.connection_guard import GuardStats
from device.outputs.page.host_check import parse_hosts
from device.outputs.page.http_address import parse_http
from device.outputs.view import DeviceView
from live.util.clock import Clock

if TYPE_CHECKING:
    from device.outputs.mqtt.publisher import MqttPublisher
    from device.outputs.page.server import StatusServer
    from device.outputs.telemetry import Telemetry

DEFAULT_HTTP = "127.0.0.1:8765"  # the only address that may move to a free port


class Service(Protocol):
    """Something that runs beside the device (status server, MQTT publisher).

    ``run`` is started in the app's task group before the source opens and is
    cancelled when the app ends; it calls ``task_status.started()`` when ready.
    """

    async def run(self, *, task_status: TaskStatus[None]) -> None: ...


@dataclass(frozen=True)
class Operations:
    telemetry: Telemetry | None = None
    server: StatusServer | None = None
    mqtt: MqttPublisher | None = None

    @property
    def services(self) -> list[Service]:
        """What runs beside the device, in the order it starts."""
        return [s for s in (self.mqtt, self.server) if s is not None]

    @property
    def delivery_checks(self) -> list[Callable[[], str | None]]:
        """Why events never reached where an output delivers them (None: all did): events
        that never reached the broker make the run incomplete, like a log's."""
        return [self.mqtt.undelivered] if self.mqtt is not None else []


def _version() -> str:
    try:
        return metadata.version("lookout")
    except metadata.PackageNotFoundError:
        return ""


def mqtt_cameras(config: Config) -> dict[str, CameraScene] | None:
    """Each named camera's lines, zones and privacy, for MQTT (None: the device names no
    camera, and its one camera's topics stay the device's own, as before)."""
    if not config.named_cameras:
        return None
    cameras = {}
    for name in config.camera_names:
        camera = config.camera(name)
        scene = camera.scene
        cameras[name] = CameraScene(
            tuple(scene.lines), tuple(scene.zones), camera.device.privacy, camera.device.area
        )
    return cameras


def build_operations(
    config: Config,
    device: DeviceView,
    bus: EventBus,
    clock: Clock,
    announce: Callable[[str], None],
) -> Operations:
    """The status server, metrics and MQTT that ``config`` asks for, subscribed to ``bus``."""
    secrets = list(config.secrets())
    mqtt_settings = parse_mqtt(config.outputs.mqtt) if config.outputs.mqtt else None
    if mqtt_settings is not None and mqtt_settings.password:
        secrets.append(mqtt_settings.password)
    address = parse_http(config.outputs.http) if config.outputs.http else None
    exposed = address is not None and not address.loopback
    if exposed and not config.outputs.http_token and not config.outputs.http_insecure:
        raise ConfigError(
            f"status server: --http {address} is reachable from the network: set a token "
            "(--http-token-file FILE or LOOKOUT_HTTP_TOKEN), or pass --http-insecure"
        )
    hosts = parse_hosts(config.outputs.http_hosts) if address is not None else ()
    mqtt: MqttPublisher | None = None
    if mqtt_settings is not None:
        # Loaded for a run that publishes or serves: aiomqtt, aiohttp and prometheus_client
        # are a fifth of a second's start that --no-http without --mqtt does not pay.
        from device.outputs.mqtt.publisher import MqttPublisher

        mqtt = MqttPublisher(
            mqtt_settings,
            device_id=config.device.device_id,
            model=config.model_name(),
            version=_version(),
            lines=list(config.scene.lines),
            zones=list(config.scene.zones),
            clock=clock,
            announce=announce,
            # The pictures --snapshots writes become image entities (never under privacy).
            pictures=config.outputs.snapshots,
            private=config.device.privacy,
            cameras=mqtt_cameras(config),
            area=config.device.area,
        )
    telemetry: Telemetry | None = None
    server: StatusServer | None = None
    if address is not None:
        from device.outputs.page.server import StatusServer
        from device.outputs.telemetry import Telemetry

        connections = GuardStats()  # the server counts them, /metrics shows them
        telemetry = Telemetry(device, mqtt=mqtt, http=connections)
        server = StatusServer(
            telemetry,
            address,
            token=config.outputs.http_token,
            secrets=tuple(secrets),
            announce=announce,
            hosts=hosts,
            connections=connections,
        )
        # Bind last: every check that can fail has passed, so no socket is left open.
        given = config.given("http")
        if given is not None:
            # An address the user chose, even the default's: proxies and scrapers point
            # at it, so it never moves; taken is their error (exit 2), said as they gave it.
            server.listen(given_as=given)
        else:
            try:
                server.listen(fallback_ports=10)
            except ConfigError as exc:
                # The page is a convenience; counting, logs and MQTT go on without it.
                announce(f"warning: {exc}; running without the status page")
                server = None
    if telemetry is not None:
        bus.subscribe(telemetry)
        bus.on_percept(telemetry.on_percept)
    if mqtt is not None:
        bus.subscribe(mqtt)
    return Operations(telemetry, server, mqtt)


__all__ = ["DEFAULT_HTTP", "Operations", "Service", "build_operations"]
