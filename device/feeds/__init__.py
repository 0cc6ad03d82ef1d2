"""Feeds: the async side of a frame source (its state, reconnects, and the frames to read)."""

from device.feeds.runner import SourceRunner, SourceState, SourceStats, StateChange

__all__ = ["SourceRunner", "SourceState", "SourceStats", "StateChange"]
