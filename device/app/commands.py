"""Commands typed on the console, answered by the device itself.

``count``, ``start``, ``stop`` and ``status`` work whether or not a model is
connected: they go through the session's own tool path as device calls
(recorded like any call), and are answered from perception. Anything else is
for the model, when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from live.calls import DeviceCall
from live.requests import LiveRequestQueue

HELP = (
    "commands: count, start, stop, status, t (push-to-talk: start, then end, what is said), "
    "help, quit (anything else goes to the model)"
)
COUNT_TOOL = "count_people"
QUIT = frozenset({"quit", "exit", "q"})
TALK = frozenset({"t", "talk"})


class CommandSession(Protocol):
    """What the commands need of a live session."""

    @property
    def model_connected(self) -> bool: ...

    @property
    def connection_state(self) -> str: ...

    async def call_tool(self, name: str, args: dict[str, object] | None = None) -> DeviceCall: ...

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, object]: ...

    def running_streams(self) -> list[dict[str, object]]: ...


def _of(camera: str | None) -> dict[str, object]:
    return {} if camera is None else {"camera": camera}


def _whose(camera: str | None, line: str) -> str:
    return line if camera is None else f"{camera}: {line}"


async def _start(session: CommandSession, camera: str | None, say: Callable[[str], None]) -> None:
    """Start the count of one camera (None: the device's one), unless it runs."""
    running = [
        s
        for s in session.running_streams()
        if s.get("name") == COUNT_TOOL and _args_camera(s) == camera
    ]
    if running:
        say(_whose(camera, f"{COUNT_TOOL} is already running (call {running[0]['id']})"))
        return
    call = await session.call_tool(COUNT_TOOL, _of(camera))
    if not call.ok:  # a start is said by its own event line (stream_started)
        say(_whose(camera, f"could not start {COUNT_TOOL}: {call.response.get('error')}"))


def _args_camera(stream: dict[str, object]) -> object:
    args = stream.get("args")
    return args.get("camera") if isinstance(args, dict) else None


def describe_count(response: dict[str, object]) -> str:
    people = response.get("people")
    if people is None:
        return f"count: unknown ({response.get('reason', 'no current count')})"
    raw = response.get("in_last_frame")
    noun = "person" if people == 1 else "people"
    detail = f" · {raw} boxes in the last frame" if raw is not None and raw != people else ""
    return f"count: {people} {noun} in view{detail}"


async def run_command(
    text: str,
    session: CommandSession,
    queue: LiveRequestQueue[Any],
    say: Callable[[str], None],
    *,
    cameras: Sequence[str] = (),
) -> None:
    """Answer one typed line (``quit`` is the caller's). ``cameras``: the device's, where it
    names them (``count`` says each one's, ``start`` starts each one's count)."""
    command = text.strip().lower()
    each: list[str | None] = list(cameras) or [None]
    if command in {"count", "how many", "?"}:
        for camera in each:
            call = await session.call_tool("count_people_now", _of(camera))
            say(_whose(camera, describe_count(call.response)))
    elif command == "start":
        for camera in each:
            await _start(session, camera, say)
    elif command == "stop":
        result = await session.stop_streaming(COUNT_TOOL)
        say(f"{result.get('status')}; the device keeps counting")
    elif command == "status":
        streams = ", ".join(f"{s['name']} ({s['id']})" for s in session.running_streams())
        say(f"model {session.connection_state}; streams: {streams or 'none'}")
    elif command in {"help", ""}:
        say(HELP)
    elif not queue.closed and (session.model_connected or session.connection_state == "connecting"):
        # Typed while the model is still connecting (the run's first seconds): it is sent
        # once it is connected, and said so; after an outage a question is not kept for
        # a model that may be back in minutes.
        queue.send_content(text.strip())
        if not session.model_connected:
            say("the model is connecting: this is sent once it is connected")
    else:
        say(f"no model connected ({session.connection_state}); {HELP}")


__all__ = ["HELP", "QUIT", "TALK", "describe_count", "run_command"]
