"""Whether the device counts: one camera's health, and the device's made of its cameras'.

Counting is what makes a device healthy. A camera counts while its source runs and
its count is known. The device is ``ok`` while every camera counts, ``degraded``
while at least one does (the others named: ``camera porch: source reconnecting``) or
something besides the counting is off (the model, a log, MQTT), and unhealthy when
none counts (``/healthz`` 503). A device of one camera says it as it did before it
had cameras: no camera is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Health:
    """``ok``: the device counts (``/healthz`` 200); ``degraded``: it does, but something is off."""

    ok: bool
    reason: str
    degraded: bool = False
    # The reason in states only, for /healthz (open without the token, to any monitor):
    # no source, file name or error text, which may say more than a monitor should know.
    summary: str = ""

    @property
    def status(self) -> str:
        if not self.ok:
            return "unhealthy"
        return "degraded" if self.degraded else "ok"

    def json(self) -> dict[str, object]:
        return {"ok": self.ok, "status": self.status, "reason": self.reason}


OK = Health(True, "ok", summary="ok")


def cameras_health(cameras: Sequence[tuple[str, Health]]) -> tuple[Health | None, list[Health]]:
    """The device's health as its cameras make it: (unhealthy: none counts, else None;
    what is off with the ones that do not count, each naming its camera)."""
    if len(cameras) == 1:
        health = cameras[0][1]
        return (None if health.ok else health), []
    off = [
        Health(False, f"camera {name}: {h.reason}", summary=f"camera {name}: {h.summary}")
        for name, h in cameras
        if not h.ok
    ]
    if len(off) < len(cameras):
        return None, off
    reason = "no camera counts: " + "; ".join(h.reason for h in off)
    summary = "no camera counts: " + "; ".join(h.summary for h in off)
    return Health(False, reason, summary=summary), []


def combined(reasons: Sequence[str], summaries: Sequence[str]) -> Health:
    """A counting device's health: ok, or degraded by what is off (each reason, and the
    same in states only)."""
    if not reasons:
        return OK
    return Health(True, "; ".join(reasons), degraded=True, summary="; ".join(summaries))


__all__ = ["OK", "Health", "cameras_health", "combined"]
