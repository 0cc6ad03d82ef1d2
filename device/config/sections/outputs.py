"""The settings of the device itself and of what leaves it: its name, privacy, its logs,
the event logs, the status server, MQTT and the snapshots."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from device.config.device_id import default_device_id
from device.config.sections.base import Section, unset
from device.config.values import (
    DeviceId,
    FilePath,
    HostNames,
    HttpAddress,
    Level,
    MqttUrl,
    SnapshotPrivacy,
    Token,
)


class DeviceSettings(Section):
    """The device itself: its name, what may leave it, what it logs."""

    device_id: DeviceId = Field(
        # Every Raspberry Pi is called raspberrypi: the host name alone would be shared.
        default_factory=default_device_id,
        description="name of this device (MQTT topics, status page)",
        json_schema_extra=unset("the host name and a suffix unique to this machine"),
    )
    privacy: bool = Field(
        default=False,
        description="no image and no audio ever leaves the device (counts and text only), "
        "whatever else is set",
    )
    area: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        default=None,
        description="the Home Assistant area suggested for this device's entities, e.g. "
        '"Shop floor" (a camera\'s own table may name its own)',
        json_schema_extra=unset("none: set areas in Home Assistant"),
    )
    log_level: Level = Field(
        default="warning",
        description="the least severe of Lookout's own log messages written to stderr "
        "(-v: at least info)",
    )


class OutputSettings(Section):
    """Where events go: the event logs, the status server, MQTT."""

    events: FilePath | None = Field(
        default=None,
        description="write events as JSON lines to this file",
        json_schema_extra=unset("none"),
    )
    db: FilePath | None = Field(
        default=None,
        description="record events in this SQLite file (ask: also jobs and per-minute counts)",
        json_schema_extra=unset("none"),
    )
    http: HttpAddress | None = Field(
        default="127.0.0.1:8765",
        description='status server address HOST:PORT ("": no status server)',
    )
    http_token: Token | None = Field(
        default=None,
        description="bearer token required by the status server (all routes but /healthz); "
        "a flag shows in ps: prefer --http-token-file or LOOKOUT_HTTP_TOKEN",
        json_schema_extra=unset("none, or LOOKOUT_HTTP_TOKEN from the environment"),
    )
    http_token_file: FilePath | None = Field(
        default=None,
        description="read the status server's token from this file (its first line)",
        json_schema_extra=unset("none"),
    )
    http_insecure: bool = Field(
        default=False,
        description="serve the status page beyond this machine without a token (anyone on "
        "the network can watch the camera and stop streams)",
    )
    http_hosts: HostNames = Field(
        default="",
        description="more host names the page may be reached by, comma-separated (a DNS name, "
        "a reverse proxy's name); the machine's own names and IP addresses always work",
    )
    mqtt: MqttUrl | None = Field(
        default=None,
        description="publish to an MQTT broker, mqtt://host:port",
        json_schema_extra=unset("no MQTT"),
    )
    snapshots: FilePath | None = Field(
        default=None,
        description="save one JPEG (boxes and ids drawn) of each crossing, dwell and count "
        "change after a quiet spell in this folder, named in a snapshot event (never with "
        "--privacy)",
        json_schema_extra=unset("no snapshots"),
    )
    snapshots_max_mb: float = Field(
        default=500.0,
        gt=0,
        le=1_000_000,
        description="the most megabytes the snapshots folder keeps (the oldest go first)",
    )
    snapshots_days: float = Field(
        default=7.0,
        gt=0,
        le=36_500,
        description="days a snapshot is kept (older ones are deleted at start and after "
        "each write)",
    )
    snapshots_quiet: float = Field(
        default=10.0,
        ge=0,
        le=86_400,
        description="seconds the count must have stood still before its change is a snapshot",
    )
    snapshots_privacy: SnapshotPrivacy = Field(
        default="none",
        description="what a snapshot shows of people: none (the frame as seen), faces (the "
        "head of every detected person pixelated), boxes (no camera pixels: the boxes, ids, "
        "lines and zones on a plain background)",
    )


__all__ = ["DeviceSettings", "OutputSettings"]
