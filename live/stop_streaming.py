"""The built-in ``stop_streaming`` tool, declared whenever a streaming tool is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from live import wire
from live.tool import ToolArgumentError, ToolContext, coalesce_updates

STOP_STREAMING = "stop_streaming"

StopFunction = Callable[[str | None, str | None], Awaitable[dict[str, Any]]]


class StopStreamingTool:
    """Stops every running call of a streaming function (or one call id).

    It answers only after the stopped calls finished their cleanup, so the
    model never sees an emission of a stream after being told it stopped.
    """

    name = STOP_STREAMING
    is_streaming = False
    consumes_input = False
    is_long_running = False

    def __init__(self, stop: StopFunction) -> None:
        self._stop = stop

    def declaration(self) -> wire.FunctionDeclaration:
        return wire.FunctionDeclaration(
            name=self.name,
            description=(
                "Stop a running streaming function. Pass the name of the function to stop; "
                "optionally a call id to stop only that call."
            ),
            parameters=wire.Schema(
                type=wire.Type.OBJECT,
                properties={
                    "function_name": wire.Schema(
                        type=wire.Type.STRING, description="Name of the streaming function."
                    ),
                    "call_id": wire.Schema(
                        type=wire.Type.STRING, description="Only stop the call with this id."
                    ),
                },
                required=["function_name"],
            ),
        )

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(str(k) for k in set(args) - {"function_name", "call_id"})
        if unknown:
            shown = ", ".join(repr(n[:40]) for n in unknown[:5])
            raise ToolArgumentError(
                f"stop_streaming: unknown argument(s) {shown}; "
                "expected function_name (string) and optional call_id (string)"
            )
        name = args.get("function_name")
        call_id = args.get("call_id")
        if name is None and call_id is None:
            raise ToolArgumentError("stop_streaming: missing required argument function_name")
        if name is not None and not isinstance(name, str):
            raise ToolArgumentError("stop_streaming: function_name must be a string")
        if call_id is not None and not isinstance(call_id, str):
            raise ToolArgumentError("stop_streaming: call_id must be a string")
        return {"function_name": name, "call_id": call_id}

    async def call(self, args: dict[str, Any], context: ToolContext) -> Any:
        return await self._stop(args.get("function_name"), args.get("call_id"))

    def stream(self, args: dict[str, Any], context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        raise TypeError("stop_streaming is not a streaming tool")

    def coalesce(self, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        return coalesce_updates(older, newer)
