"""The Prometheus view of the device: read at scrape time from what the app already counts.

Counters the app keeps anyway (frames, detections, emissions, reconnects,
tokens) are read when ``/metrics`` is scraped instead of being mirrored, so the
two can never disagree. Each camera's series (its count, lines, zones, frames
and detector) carry a ``camera`` label (``page/camera_metrics.py``); the device's own
(the model, the session, MQTT, the server, the logs) carry none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from device.outputs.page.camera_metrics import SOURCE_STATES, camera_metrics
from device.outputs.pictures.snapshots import OUTCOMES as SNAPSHOT_OUTCOMES
from live.link.budget import LEVELS as BUDGET_LEVELS
from live.stats import SessionStats
from tools.look import OUTCOMES as LOOK_OUTCOMES

if TYPE_CHECKING:
    from device.outputs.telemetry import Telemetry
    from device.outputs.view import DeviceView

DROP_REASONS = ("rate", "late", "unusable")
CONNECTION_STATES = (
    "connecting",
    "reconnecting",
    "connected",
    "disconnected",
    "unreachable",
    "refused",
    "go_away",
    "failed",
    "closed",
)


def _one_hot(name: str, documentation: str, states: Iterable[str], current: str) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=["state"])
    for state in states:
        family.add_metric([state], 1.0 if state == current else 0.0)
    return family


def _budget(budget: Mapping[str, Any] | None) -> Iterable[Metric]:
    """The spending cap, when one is set: tokens used and the limits, its state."""
    if budget is None:
        return
    used = GaugeMetricFamily(
        "lookout_model_budget_tokens",
        "Tokens counted against the spending cap: the rolling hour, the session",
        labels=["window"],
    )
    limit = GaugeMetricFamily(
        "lookout_model_budget_limit_tokens",
        "The spending cap's limits (--budget-tokens an hour, --budget-session)",
        labels=["window"],
    )
    for window in ("hour", "session"):
        used.add_metric([window], budget[window]["used"])
        if budget[window]["limit"] is not None:
            limit.add_metric([window], budget[window]["limit"])
    yield used
    yield limit
    yield _one_hot(
        "lookout_model_budget_state",
        "The spending cap: normal, saving (80 %: no frames, no looks), capped (100 %: "
        "updates to the model at most one a minute)",
        BUDGET_LEVELS,
        budget["state"],
    )
    yield CounterMetricFamily(
        "lookout_model_budget_thinned",
        "Emissions merged into a later one because the spending cap was reached",
        value=budget["thinned"],
    )


class AppCollector(Collector):
    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def collect(self) -> Iterable[Metric]:
        tel = self.telemetry
        device = tel.device
        session = device.session
        stats = session.stats if session is not None else SessionStats()
        cameras = list(tel.cameras.values())
        yield from camera_metrics(cameras)
        dropped = CounterMetricFamily(
            "lookout_frames_dropped",
            "Frames dropped, by camera and reason (the model lane's and the budget's are "
            "the device's: no camera)",
            labels=["camera", "reason"],
        )
        for camera in cameras:
            capture = camera.camera.capture.stats
            reasons = dict.fromkeys(DROP_REASONS, 0) | dict(capture.dropped)
            for reason, value in sorted(reasons.items()):
                dropped.add_metric([camera.name, reason], value)
        # An empty label is no label to Prometheus: sum by (reason) adds them up all the same.
        dropped.add_metric(["", "model_lane"], stats.frames_model_lane_dropped)
        if stats.frames_budget_held:
            dropped.add_metric(["", "budget"], stats.frames_budget_held)  # the spending cap
        yield dropped
        counters = (
            ("lookout_emissions", "Streaming tool emissions", stats.emissions),
            (
                "lookout_emissions_coalesced",
                "Emissions merged while the model could not take them",
                stats.emissions_coalesced,
            ),
            ("lookout_tool_calls", "Tool calls (model and device)", stats.tool_calls),
            ("lookout_model_reconnects", "Reconnects to the live model", stats.reconnects),
            ("lookout_frames_to_model", "Frames sent to the live model", stats.frames_to_model),
            ("lookout_events_dropped", "Events a slow reader missed", stats.events_dropped),
            (
                "lookout_outbox_dropped",
                "Messages for the model dropped past the outbox bound",
                stats.outbox_dropped,
            ),
        )
        for name, documentation, value in counters:
            yield CounterMetricFamily(name, documentation, value=value)
        tokens = CounterMetricFamily(
            "lookout_model_tokens", "Token usage reported by the model", labels=["kind"]
        )
        tokens.add_metric(["prompt"], stats.usage_prompt_tokens)
        tokens.add_metric(["response"], stats.usage_response_tokens)
        tokens.add_metric(["total"], stats.usage_total_tokens)
        yield tokens
        by_modality = CounterMetricFamily(
            "lookout_model_prompt_tokens_by_modality",
            "Prompt tokens by modality, where the model reports them (IMAGE: frames and looks)",
            labels=["modality"],
        )
        for modality, value in sorted(stats.usage_prompt_by_modality.items()):
            by_modality.add_metric([modality], value)
        yield by_modality
        yield from _budget(device.budget)
        looks = CounterMetricFamily(
            "lookout_looks",
            "The model's looks at the scene (its look tool), by outcome",
            labels=["outcome"],
        )
        for outcome, value in sorted(
            (dict.fromkeys(LOOK_OUTCOMES, 0) | dict(device.looks)).items()
        ):
            looks.add_metric([outcome], value)
        yield looks
        audio = CounterMetricFamily(
            "lookout_audio",
            "The voice: microphone chunks (20 ms) heard, sent, muted while speaking, held "
            "(push-to-talk); the session's chunks to the model and lost (no model, privacy); "
            "loudspeaker milliseconds played and cut by a barge-in",
            labels=["what"],
        )
        audio_counts = dict(device.audio) | {
            "session_to_model": stats.audio_to_model,
            "session_lost": stats.audio_lost,
        }
        for what, value in sorted(audio_counts.items()):
            audio.add_metric([what], value)
        yield audio
        snapshots = CounterMetricFamily(
            "lookout_snapshots",
            "Event pictures (--snapshots) by outcome: written, dropped (the writer was "
            "behind), failed (the write failed), pruned (the folder's size or age cap)",
            labels=["outcome"],
        )
        for outcome, value in (
            dict.fromkeys(SNAPSHOT_OUTCOMES, 0) | dict(device.snapshot_counts)
        ).items():
            snapshots.add_metric([outcome], value)
        yield snapshots
        health = tel.health()
        streams = len(tel.running_streams())
        connected = float(tel.model_connected())
        gauges: list[tuple[str, str, float | None]] = [
            ("lookout_running_streams", "Streaming calls running now", streams),
            ("lookout_healthy", "1 when /healthz answers 200 (it counts)", float(health.ok)),
            ("lookout_degraded", "1 when it counts but something is off", float(health.degraded)),
            ("lookout_model_connected", "1 while a model is connected", connected),
            ("lookout_session_seconds", "Seconds since the session started", tel.session_time()),
        ]  # fmt: skip
        if tel.mqtt is not None:
            gauges.append(
                ("lookout_mqtt_connected", "1 while connected", float(tel.mqtt.connected))
            )
            gauges.append(("lookout_mqtt_queued", "MQTT messages not yet acked", tel.mqtt.queued))
        for name, documentation, gauge in gauges:
            yield GaugeMetricFamily(name, documentation, value=gauge)
        yield from _log_metrics(device)
        if tel.http is not None:
            yield GaugeMetricFamily(
                "lookout_http_connections", "Status server connections open", value=tel.http.open
            )
            yield CounterMetricFamily(
                "lookout_http_refused",
                "Connections refused (503) past the cap",
                value=tel.http.refused,
            )
            yield CounterMetricFamily(
                "lookout_http_timed_out",
                "Connections closed for sending no request in time",
                value=tel.http.timed_out,
            )
            paced = tel.http.paced
            yield CounterMetricFamily(
                "lookout_http_answers_waited",
                "Requests answered in turn, after waiting: readers asked faster than the rate",
                value=paced.waited,
            )
            yield CounterMetricFamily(
                "lookout_http_answers_refused",
                "Requests answered 429: their turn was too far off",
                value=paced.refused,
            )
        if tel.mqtt is not None:
            yield CounterMetricFamily(
                "lookout_mqtt_published", "MQTT messages acknowledged", value=tel.mqtt.published
            )
            yield CounterMetricFamily(
                "lookout_mqtt_dropped",
                "MQTT events that never reached the broker (queue full, or waiting at exit)",
                value=tel.mqtt.dropped,
            )
        yield _one_hot(
            "lookout_model_connection_state",
            "Live model connection state (1 for the current one)",
            CONNECTION_STATES,
            tel.model_state(),
        )
        info = GaugeMetricFamily(
            "lookout_info", "Device and model of this process", labels=["device_id", "model"]
        )
        info.add_metric([device.config.device.device_id, device.config.model_name()], 1.0)
        yield info


def _log_metrics(device: DeviceView) -> Iterable[Metric]:
    """The event logs' own counts (what --db and --events hold, wait for, or lost)."""
    counts = device.logs.counts()
    if not counts:
        return
    written = CounterMetricFamily(
        "lookout_event_log_written", "Events written to the event log", labels=["log"]
    )
    lost = CounterMetricFamily(
        "lookout_event_log_lost", "Events the event log could not keep", labels=["log"]
    )
    pending = GaugeMetricFamily(
        "lookout_event_log_pending", "Events waiting in memory to be written", labels=["log"]
    )
    failing = GaugeMetricFamily(
        "lookout_event_log_failing", "1 while writing to the log fails", labels=["log"]
    )
    for log in counts:
        written.add_metric([log.log], log.written)
        lost.add_metric([log.log], log.lost)
        pending.add_metric([log.log], log.pending)
        failing.add_metric([log.log], float(log.failing))
    yield from (written, lost, pending, failing)


__all__ = ["CONNECTION_STATES", "DROP_REASONS", "SOURCE_STATES", "AppCollector"]
