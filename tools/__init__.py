"""Tool machinery (FunctionTool) and Lookout's tools.

Its names load on first use, so perception code that imports nothing of the
tools does not pay for pydantic and the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.lazy import lazy_names

if TYPE_CHECKING:
    from live.stop_streaming import STOP_STREAMING, StopStreamingTool
    from tools.function_tool import FunctionTool, is_streaming_callable, schema_for

_WHERE = {
    "FunctionTool": "tools.function_tool",
    "STOP_STREAMING": "live.stop_streaming",
    "StopStreamingTool": "live.stop_streaming",
    "is_streaming_callable": "tools.function_tool",
    "schema_for": "tools.function_tool",
}


__getattr__ = lazy_names(__name__, _WHERE)

__all__ = [
    "STOP_STREAMING",
    "FunctionTool",
    "StopStreamingTool",
    "is_streaming_callable",
    "schema_for",
]
