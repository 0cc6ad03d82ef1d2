"""Lookout's live runtime: request queue, input fan-out, streaming tools, session loop.

This package imports nothing else of Lookout's.
"""

from live.clock import Clock, FakeClock, MonotonicClock
from live.config import PENDING_STATUS, EmitMode, ReconnectPolicy, SessionConfig, StreamBounds
from live.eventlog import EventLog, MemoryEventLog, SQLiteEventLog, read_events
from live.input_stream import InputStream
from live.model import ConnectionLost, LiveConnection, LiveModel, LiveSetup, ModelSetupError
from live.requests import LiveRequest, LiveRequestQueue, RequestKind
from live.session import DeviceCall, LiveSession, Runner
from live.stop_streaming import STOP_STREAMING
from live.store import SQLiteStore, StoreError, StoreHealth
from live.tool import Tool, ToolArgumentError, ToolContext, ToolUnavailable

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
