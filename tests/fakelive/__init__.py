"""Fake Gemini servers over TLS (Live WebSocket and REST generateContent), for driving the
real google-genai SDK in tests.

See ``tests/fakelive/server.py`` (Live; beside it what it records, ``records.py``, and its
thread mode, ``threaded.py``), ``tests/fakelive/rest.py`` (REST), ``endpoint.py`` (how a
client finds either), ``docs/gemini-live-wire.md`` and ``docs/gemini-rest-wire.md``.
"""

from .certs import TestCerts, make_test_certs
from .endpoint import LiveEndpoint, client_for
from .records import (
    ClientContent,
    ClientMessage,
    FunctionResponseRecord,
    LiveConnection,
    RealtimeInput,
    SentMessage,
)
from .rest import (
    NO_ANSWER,
    FakeGenerateServer,
    FakeHttpError,
    FunctionCallSent,
    FunctionResponseSent,
    GenerateRequest,
    NoAnswer,
    Responder,
    ThreadedFakeGenerateServer,
    error_response,
    function_call_response,
    model_response,
    text_response,
)
from .server import FakeLiveServer, ToolCallSpec
from .threaded import ThreadedFakeLiveServer
from .wire import b64decode_any, get_field, get_path

__all__ = [
    "NO_ANSWER",
    "ClientContent",
    "ClientMessage",
    "FakeGenerateServer",
    "FakeHttpError",
    "FakeLiveServer",
    "FunctionCallSent",
    "FunctionResponseRecord",
    "FunctionResponseSent",
    "GenerateRequest",
    "LiveConnection",
    "LiveEndpoint",
    "NoAnswer",
    "RealtimeInput",
    "Responder",
    "SentMessage",
    "TestCerts",
    "ThreadedFakeGenerateServer",
    "ThreadedFakeLiveServer",
    "ToolCallSpec",
    "b64decode_any",
    "client_for",
    "error_response",
    "function_call_response",
    "get_field",
    "get_path",
    "make_test_certs",
    "model_response",
    "text_response",
]
