"""The embedded offline model: a small deterministic LiveModel.

It makes a device useful with no network and no API key, and it goes through
exactly the same runtime path as Gemini: it calls ``count_people`` with a real
call id at session start, receives the pending answer and every emission as
FunctionResponses (or text in text mode), and answers typed commands that
arrive as user content through the request queue:

    count  - say the current count
    stop   - call stop_streaming("count_people")
    start  - call count_people again (if it is not running)
    help   - list the commands

and a typed question about the count ("how many people are here?") with the
count. It understands no other free text and says so, naming what would.

Where the device names its cameras (``count_people`` takes ``camera``, an enum of
the names) it counts each: one ``count_people`` call per camera, and one watch per
line and zone of each camera (``LocalModel(cameras=...)``: the enum of a watch's
name is every camera's together), and says whose each sentence is
("door: 4 people in view (was 3).").
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from live.model import (
    ConnectionLost,
    FunctionCallRequest,
    LiveSetup,
    ModelEvent,
    ModelResumptionUpdate,
    ModelTextOut,
    ModelToolCall,
    ModelTurnComplete,
    Outbound,
    SendContent,
    SendText,
    SendToolResponse,
)
from models.local.question import Names, Query, What, read_question

COUNT_TOOL = "count_people"
STOP_TOOL = "stop_streaming"
WATCH_TOOLS = ("watch_line", "watch_zone")
HELP = "Commands: count, stop, start, help, quit."
_TEXT_EMISSION = re.compile(r"^Function (\w+) returned: (.*)$", re.S)
SCENE_NEWS = "Scene changed: "  # the device's news of a scene edit (device/app/scene/news.py)


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def describe(payload: dict[str, Any]) -> str | None:
    """The sentence the local model says for one emission of count_people."""
    status = payload.get("status")
    if status == "error":
        return f"Counting problem: {payload.get('error', 'unknown error')}"
    if status == "stopped":
        return f"Counting stopped ({payload.get('reason', 'no reason given')})."
    if status == "finished":
        return "Counting finished."
    if "people" in payload and payload["people"] is None:
        return f"Count unknown: {payload.get('reason', 'no reason given')}."
    if "people" in payload and isinstance(payload["people"], int):
        now = payload["people"]
        previous = payload.get("previous")
        if previous is None:
            return f"{people(now)} in view."
        return f"{people(now)} in view (was {previous})."
    return None


def describe_scene(payload: dict[str, Any]) -> str | None:
    """The sentence for one emission of watch_line or watch_zone."""
    if payload.get("status") in {"stopped", "finished", "error"}:
        what = payload.get("error") or payload.get("reason") or payload["status"]
        return f"Watching stopped ({what})."
    if "line" in payload:
        totals = f"{payload.get('in', 0)} in, {payload.get('out', 0)} out"
        if payload.get("counting") is False:
            return f"Line {payload['line']}: {totals} so far; not counting ({payload['reason']})."
        last = payload.get("last")
        tail = f" (last: {last})" if last else ""
        return f"Line {payload['line']}: {totals}{tail}."
    if "zone" in payload:
        zone = payload["zone"]
        if payload.get("people") is None:
            return f"Zone {zone}: count unknown ({payload.get('reason', 'no reason given')})."
        text = f"Zone {zone}: {people(int(payload['people']))}"
        if payload.get("dwelling"):
            text += (
                f", {payload['dwelling']} there longer than {payload.get('dwell_s', 0):g} s "
                f"(longest {payload.get('longest_s', 0):g} s)"
            )
        return text + "."
    return None


def watch_names(setup: LiveSetup, tool: str, parameter: str = "name") -> list[str]:
    """The configured names a tool's parameter takes (the enum of a watch tool's ``name``,
    or of ``count_people``'s ``camera``)."""
    for declaration in setup.tools:
        if declaration.name != tool or declaration.parameters is None:
            continue
        prop = (declaration.parameters.properties or {}).get(parameter)
        return [str(v) for v in (prop.enum or [])] if prop is not None else []
    return []


def whose(camera: str, sentence: str | None) -> str | None:
    """A sentence about one camera, said as its (a device with one unnamed camera: as is)."""
    return f"{camera}: {sentence}" if camera and sentence is not None else sentence


@dataclass
class _State:
    # Each camera's count and running count_people call ("": the one unnamed camera).
    counts: dict[str, int | None] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)
    handle: str | None = None
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (tool, camera)

    def camera_of(self, call_id: str) -> str:
        return self.calls.get(call_id, ("", ""))[1]


class LocalConnection:
    def __init__(self, model: LocalModel, setup: LiveSetup) -> None:
        self.model = model
        self.setup = setup
        # Unbounded: at connect it calls a tool per configured line and zone, however many
        # there are, before anyone reads; after that the session reads as it goes, and
        # each message sent yields at most two events.
        self._send, self._recv = anyio.create_memory_object_stream[ModelEvent](math.inf)
        self._closed = False
        declared = {d.name for d in setup.tools}
        self._can_count = COUNT_TOOL in declared
        self._can_stop = STOP_TOOL in declared
        # The cameras it counts ("": the one unnamed camera, called without ``camera``).
        self._cameras = watch_names(setup, COUNT_TOOL, "camera") or [""]
        state = model.state
        if setup.resumption_handle is None or setup.resumption_handle != state.handle:
            state.handle = f"local-{model.connections}"
            if self._can_count and model.autostart:
                for camera in self._cameras:
                    self._call(COUNT_TOOL, {}, camera)
            if model.autostart:
                # Every configured line and zone of every camera is watched from the start.
                for tool in (t for t in WATCH_TOOLS if t in declared):
                    for camera in self._cameras:
                        for name in self._watched(setup, tool, camera):
                            self._call(tool, {"name": name}, camera)
        self._emit(ModelResumptionUpdate(state.handle, True))

    def _watched(self, setup: LiveSetup, tool: str, camera: str) -> list[str]:
        if camera:
            return self.model.cameras.get(camera, {}).get(tool, [])
        return watch_names(setup, tool) or self.model.watch.get(tool, [])

    def _emit(self, event: ModelEvent) -> None:
        if not self._closed:
            self._send.send_nowait(event)

    def _say(self, text: str, *, narration: bool = False) -> None:
        self._emit(ModelTextOut(text, narration=narration))
        self._emit(ModelTurnComplete())

    def _call(self, name: str, args: dict[str, Any], camera: str = "") -> str:
        call_id = f"local-call-{next(self.model.ids)}"
        self.model.state.calls[call_id] = (name, camera)
        if name == COUNT_TOOL:
            self.model.state.running[camera] = call_id
        if camera:
            args = {"camera": camera, **args}
        self._emit(ModelToolCall((FunctionCallRequest(call_id, name, args),)))
        return call_id

    async def send(self, message: Outbound) -> None:
        if self._closed:
            raise ConnectionLost("local model connection is closed", code=1000)
        if isinstance(message, SendToolResponse):
            for response in message.responses:
                self._on_response(response.id or "", dict(response.response or {}))
        elif isinstance(message, SendContent):
            for part in message.content.parts or []:
                if part.text:
                    self._on_text(part.text)
        elif isinstance(message, SendText):
            self._on_text(message.text)
        await anyio.lowlevel.checkpoint()

    def _on_response(self, call_id: str, payload: dict[str, Any]) -> None:
        name, camera = self.model.state.calls.get(call_id, ("", ""))
        if name == COUNT_TOOL:
            self._on_emission(call_id, payload)
        elif name == STOP_TOOL:
            # The answer names the calls it stopped: in text mode their final emission
            # carries no camera (the runtime says it), so this is where they end.
            stopped = {s.get("id") for s in payload.get("stopped", []) if isinstance(s, dict)}
            running = self.model.state.running
            for camera in [c for c, i in running.items() if i in stopped]:
                del running[camera]
            self._say(str(payload.get("status", "Stopped.")))
        elif name in WATCH_TOOLS:
            sentence = whose(camera, describe_scene(payload))
            if sentence is not None:
                self._say(sentence, narration=True)

    def _on_emission(self, call_id: str, payload: dict[str, Any]) -> None:
        state = self.model.state
        camera = state.camera_of(call_id)
        ended = (
            payload.get("status") in {"stopped", "finished", "error"} and "people" not in payload
        )
        if ended and state.running.get(camera) == call_id:
            del state.running[camera]
        if "people" in payload:
            people = payload["people"]
            state.counts[camera] = people if isinstance(people, int) else None
        sentence = whose(camera, describe(payload))
        if sentence is not None:
            self._say(sentence, narration=True)

    def _on_text(self, text: str) -> None:
        if text.startswith(SCENE_NEWS):
            self._on_scene(text.removeprefix(SCENE_NEWS))
            return
        match = _TEXT_EMISSION.match(text.strip())
        if match:
            # Text emission mode: the same emission, carried as user text.
            try:
                payload = json.loads(match.group(2))
            except ValueError:
                return
            if match.group(1) == COUNT_TOOL and isinstance(payload, dict):
                # Text carries no call id: the payload says its camera, where they are named.
                camera = str(payload.get("camera", ""))
                self._on_emission(self.model.state.running.get(camera, ""), payload)
            return
        self._command(text.strip().lower())

    def _on_scene(self, news: str) -> None:
        """A scene edited on the page: a watch for each new line and zone, as at start (a
        removed one's watch ends by itself, saying it is gone)."""
        try:
            scene = json.loads(news)
            new = scene["new"]
            camera = str(scene.get("camera", ""))
        except (ValueError, KeyError, TypeError):
            return
        declared = {d.name for d in self.setup.tools}
        for tool, kind in (("watch_line", "lines"), ("watch_zone", "zones")):
            if tool in declared and self.model.autostart:
                for name in new.get(kind, []):
                    self._call(tool, {"name": str(name)}, camera)

    def _count_of(self, camera: str) -> str:
        state = self.model.state
        count = state.counts.get(camera)
        if count is None:
            said = "No count yet." if camera in state.running else "Counting is off."
        else:
            said = f"{people(count)} in view."
        return whose(camera, said) or said

    def _command(self, command: str) -> None:
        state = self.model.state
        if command in {"count", "how many", "how many people?", "?"}:
            self._say(" ".join(self._count_of(camera) for camera in self._cameras))
        elif command == "stop":
            if self._can_stop:
                self._call(STOP_TOOL, {"function_name": COUNT_TOOL})
            else:
                self._say("Nothing to stop.")
        elif command == "start":
            idle = [camera for camera in self._cameras if camera not in state.running]
            if not idle:
                self._say("Already counting.")
            elif self._can_count:
                for camera in idle:
                    self._call(COUNT_TOOL, {}, camera)
            else:
                self._say("count_people is not available.")
        elif command in {"help", ""}:
            self._say(HELP)
        elif self._asks_the_count(command):
            self._command("count")  # "how many people are here?", "anyone there?"
        else:
            # It understands no free text: it says so, and what it can do, instead of
            # pretending (or calling a person's question an unknown command).
            self._say(f"I am the offline model: I can only answer about the count; {command!r} "
                      f"needs a Gemini model (--model). {HELP}")  # fmt: skip

    def _asks_the_count(self, command: str) -> bool:
        """A question read whole as "how many people are in view now" (and no other)."""
        query = read_question(command, Names(cameras=tuple(self._cameras)))
        return isinstance(query, Query) and query.what is What.PEOPLE_NOW and not query.zone

    async def receive(self) -> AsyncIterator[ModelEvent]:
        async for event in self._recv:
            yield event

    async def close(self) -> None:
        self._closed = True
        self._send.close()


class LocalModel:
    """Implements ``live.model.LiveModel`` without any network."""

    def __init__(
        self,
        *,
        autostart: bool = True,
        watch: dict[str, list[str]] | None = None,
        cameras: dict[str, dict[str, list[str]]] | None = None,
    ) -> None:
        self.name = "local"
        self.autostart = autostart
        # The names each watch tool is started for (``watch_line``: the configured lines),
        # where its declaration takes any name (the status page can draw more) and so
        # lists none in an enum.
        self.watch = watch or {}
        # The same for each named camera: a watch's enum is every camera's names together.
        self.cameras = cameras or {}
        self.state = _State()
        self.ids = itertools.count(1)
        self.connections = 0

    async def connect(self, setup: LiveSetup) -> LocalConnection:
        self.connections += 1
        await anyio.lowlevel.checkpoint()
        return LocalConnection(self, setup)
