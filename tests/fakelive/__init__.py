"""A fake Gemini Live server over TLS, for driving the real google-genai SDK in tests.

See ``tests/fakelive/server.py`` and ``docs/gemini-live-wire.md``.
"""

from .certs import TestCerts, make_test_certs
from .server import (
    ClientContent,
    ClientMessage,
    FakeLiveServer,
    FunctionResponseRecord,
    LiveConnection,
    LiveEndpoint,
    RealtimeInput,
    SentMessage,
    ThreadedFakeLiveServer,
    ToolCallSpec,
    b64decode_any,
    client_for,
    get_field,
    get_path,
)

__all__ = [
    "ClientContent",
    "ClientMessage",
    "FakeLiveServer",
    "FunctionResponseRecord",
    "LiveConnection",
    "LiveEndpoint",
    "RealtimeInput",
    "SentMessage",
    "TestCerts",
    "ThreadedFakeLiveServer",
    "ToolCallSpec",
    "b64decode_any",
    "client_for",
    "get_field",
    "get_path",
    "make_test_certs",
]
