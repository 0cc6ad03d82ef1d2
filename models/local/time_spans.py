"""How a span of minutes is said back: ``said_span`` ("90 minutes", "2 days", "2 weeks")."""

from __future__ import annotations


def said_span(minutes: float) -> str:
    """``90 minutes``, ``2 days``, ``2 weeks``: how a span is said back."""
    for unit, size in (("week", 10080.0), ("day", 1440.0), ("hour", 60.0)):
        if minutes >= size and (minutes / size).is_integer():
            count = int(minutes / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{minutes:g} minutes"


__all__ = ["said_span"]
