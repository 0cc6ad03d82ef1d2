"""Lookout's live runtime: request queue, input fan-out, streaming tools, session loop.

This package imports nothing else of Lookout's.

Its names load on first use: importing one of its modules (``live.events``,
``live.picture``) loads that module, not the session. The runtime's values are
its own (``live/wire.py``): nothing in it imports google-genai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.lazy import lazy_names

if TYPE_CHECKING:
    from live.calls import DeviceCall
    from live.clock import Clock, FakeClock, MonotonicClock
    from live.config import PENDING_STATUS, EmitMode, ReconnectPolicy, SessionConfig, StreamBounds
    from live.eventlog import EventLog, MemoryEventLog, SQLiteEventLog, read_events
    from live.input_stream import InputStream
    from live.model import ConnectionLost, LiveConnection, LiveModel, LiveSetup, ModelSetupError
    from live.requests import LiveRequest, LiveRequestQueue, RequestKind
    from live.session import LiveSession, Runner
    from live.stop_streaming import STOP_STREAMING
    from live.store import SQLiteStore, StoreError, StoreHealth
    from live.tool import Tool, ToolArgumentError, ToolContext, ToolUnavailable

_WHERE = {
    "Clock": "live.clock",
    "ConnectionLost": "live.model",
    "DeviceCall": "live.calls",
    "EmitMode": "live.config",
    "EventLog": "live.eventlog",
    "FakeClock": "live.clock",
    "InputStream": "live.input_stream",
    "LiveConnection": "live.model",
    "LiveModel": "live.model",
    "LiveRequest": "live.requests",
    "LiveRequestQueue": "live.requests",
    "LiveSession": "live.session",
    "LiveSetup": "live.model",
    "MemoryEventLog": "live.eventlog",
    "ModelSetupError": "live.model",
    "MonotonicClock": "live.clock",
    "PENDING_STATUS": "live.config",
    "ReconnectPolicy": "live.config",
    "RequestKind": "live.requests",
    "Runner": "live.session",
    "SQLiteEventLog": "live.eventlog",
    "SQLiteStore": "live.store",
    "STOP_STREAMING": "live.stop_streaming",
    "SessionConfig": "live.config",
    "StoreError": "live.store",
    "StoreHealth": "live.store",
    "StreamBounds": "live.config",
    "Tool": "live.tool",
    "ToolArgumentError": "live.tool",
    "ToolContext": "live.tool",
    "ToolUnavailable": "live.tool",
    "read_events": "live.eventlog",
}


__getattr__ = lazy_names(__name__, _WHERE)

__all__ = [
    "PENDING_STATUS",
    "STOP_STREAMING",
    "Clock",
    "ConnectionLost",
    "DeviceCall",
    "EmitMode",
    "EventLog",
    "FakeClock",
    "InputStream",
    "LiveConnection",
    "LiveModel",
    "LiveRequest",
    "LiveRequestQueue",
    "LiveSession",
    "LiveSetup",
    "MemoryEventLog",
    "ModelSetupError",
    "MonotonicClock",
    "ReconnectPolicy",
    "RequestKind",
    "Runner",
    "SQLiteEventLog",
    "SQLiteStore",
    "SessionConfig",
    "StoreError",
    "StoreHealth",
    "StreamBounds",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolUnavailable",
    "read_events",
]
