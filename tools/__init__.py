"""Tool machinery (FunctionTool) and Lookout's tools."""

from live.stop_streaming import STOP_STREAMING, StopStreamingTool
from tools.function_tool import FunctionTool, is_streaming_callable, schema_for

__all__ = [
    "STOP_STREAMING",
    "FunctionTool",
    "StopStreamingTool",
    "is_streaming_callable",
    "schema_for",
]
