"""Shared helpers of the operations tests: a fake App, a Mosquitto broker, an MQTT subscriber,
a TCP proxy that puts the broker at a distance."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import random
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from paho.mqtt import client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from device.capture import CaptureStats
from device.config import Config
from device.events import CountChanged, LineCrossed, ZoneCount
from device.feeds.runner import SourceState
from device.outputs.page.http_address import HttpAddress
from device.outputs.page.server import StatusServer
from device.outputs.telemetry import Telemetry
from device.outputs.view import NoLogs, SceneControl
from device.vision.percept import CountUnknown
from device.vision.perception import PerceptionStats
from live.calls import DeviceCall
from live.events import Event
from live.stats import SessionStats
from live.util.clock import FakeClock
from tests.percepts import make_percept

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def tools_required() -> bool:
    """Under CI (or when asked to), a missing Debian tool fails its tests instead of skipping.

    Skipping is for a developer's machine that lacks the package; in CI, where
    .ci/run installs it, a skip would hide that the test never ran.
    """
    ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    return ci or bool(os.environ.get("LOOKOUT_REQUIRE_BROWSER"))


def need_tool(path: Path | None, what: str, package: str) -> Path:
    if path is not None and path.exists():
        return path
    message = f"{what} not found: apt-get install -y {package}"
    if tools_required():
        pytest.fail(f"{message} (required here: CI or LOOKOUT_REQUIRE_BROWSER is set)")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def health(port: int, timeout: float = 5.0) -> int:
    """The status a device's ``/healthz`` answers now (0: no answer at all)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as a:
            return int(a.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll an external process with a deadline (only for things we get no event from)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)


# --------------------------------------------------------------------- fake app


def perceived(telemetry: Telemetry, event: CountChanged) -> None:
    """A count change as perception tells the page: the ``count`` event (the history),
    then the percept that holds the count, or the count unknown (the state shown). The
    percept keeps the camera's lines and zones as they stand."""
    telemetry.write(event)
    if event.count is None:
        telemetry.on_percept(CountUnknown(event.reason or "unknown", camera=event.camera))
        return
    state = telemetry.cameras[event.camera]
    telemetry.on_percept(
        make_percept(
            count=event.count,
            raw=event.raw if event.raw is not None else event.count,
            t=event.t_media or 0.0,
            lines=state.lines,
            zones=state.zones,
            camera=event.camera,
        )
    )


@dataclass
class FakeSession:
    stats: SessionStats = field(default_factory=SessionStats)
    connection_state: str = "connected"
    started_at: float = 0.0
    streams: list[dict[str, Any]] = field(default_factory=list)
    stop_calls: list[tuple[str | None, str | None]] = field(default_factory=list)
    start_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def model_connected(self) -> bool:
        return self.connection_state == "connected"

    def running_streams(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.streams]

    def streaming_tools(self) -> list[str]:
        return ["count_people"]

    async def call_tool(self, name: str, args: dict[str, Any] | None = None) -> DeviceCall:
        self.start_calls.append((name, dict(args or {})))
        call_id = f"device-{len(self.start_calls)}"
        self.streams.append({"id": call_id, "name": name, "by": "device", "running_s": 0.0,
                             "emissions": 0})  # fmt: skip
        return DeviceCall(call_id, name, {"status": "pending"})

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]:
        self.stop_calls.append((function_name, call_id))
        hit = [
            s
            for s in self.streams
            if (function_name is None or s["name"] == function_name)
            and (call_id is None or s["id"] == call_id)
        ]
        self.streams = [s for s in self.streams if s not in hit]
        if not hit:
            return {"status": f"No active streaming function named {function_name}"}
        return {"status": f"Successfully stopped streaming function {function_name}"}


@dataclass
class FakeCapture:
    stats: CaptureStats = field(default_factory=CaptureStats)


@dataclass
class FakeSourceRunner:
    state: SourceState = SourceState.RUNNING


@dataclass
class FakePerception:
    stats: PerceptionStats = field(default_factory=PerceptionStats)
    tracker: Any = None


@dataclass
class FakeCamera:
    """A fake of one camera as the outputs read it (``device/outputs/view.py:CameraView``)."""

    name: str
    config: Config
    live: bool = True
    capture: FakeCapture = field(default_factory=FakeCapture)
    source_runner: FakeSourceRunner = field(default_factory=FakeSourceRunner)
    perception: FakePerception = field(default_factory=FakePerception)
    source_fps: float | None = None
    source_fps_note: str | None = None
    decode_ms: float | None = None
    detect_fps: float = 2.0
    achieved_fps: float | None = None
    behind: bool = False
    scene: SceneControl | None = None


class _OnlyCamera:
    """A fake app's one camera: its own parts, read through, so a test that changes the
    app (its source's state, its stats) changes the camera."""

    def __init__(self, app: FakeApp) -> None:
        self._app = app
        self.name = app.config.camera_name
        self.live = True
        self.detect_fps = app.config.detection_fps()
        self.achieved_fps: float | None = None
        self.behind = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._app, name)


@dataclass
class FakeApp:
    """A fake of the device's read-only view (``device/outputs/view.py:DeviceView``).

    Its one camera is made of its own fields; ``camera_list`` gives it several instead."""

    config: Config = field(default_factory=lambda: Config.of(device_id="test-cam", model="local"))
    clock: FakeClock = field(default_factory=FakeClock)
    session: FakeSession | None = field(default_factory=FakeSession)
    capture: FakeCapture = field(default_factory=FakeCapture)
    source_runner: FakeSourceRunner = field(default_factory=FakeSourceRunner)
    perception: FakePerception = field(default_factory=FakePerception)
    source_fps: float | None = None
    source_fps_note: str | None = None
    decode_ms: float | None = None
    logs: NoLogs = field(default_factory=NoLogs)
    looks: dict[str, int] = field(default_factory=dict)
    budget: dict[str, Any] | None = None  # the spending cap's snapshot (None: no cap)
    audio: dict[str, int] = field(default_factory=dict)
    snapshot_counts: dict[str, int] = field(default_factory=dict)
    push_to_talk: bool = False
    scene: SceneControl | None = None
    camera_list: list[FakeCamera] = field(default_factory=list)
    _only: _OnlyCamera | None = field(default=None, repr=False)

    @property
    def cameras(self) -> dict[str, Any]:
        if self.camera_list:
            return {camera.name: camera for camera in self.camera_list}
        if self._only is None:
            self._only = _OnlyCamera(self)
        return {self._only.name: self._only}

    def talk(self, on: bool) -> tuple[str, bool]:
        return "no microphone (--mic)", False


def two_cameras(till: Mapping[str, Any] | None = None, **config: Any) -> FakeApp:
    """A fake app with cameras door and till: the device's settings ``config``, and
    till's own ``till``."""
    cameras = {
        "door": {"source": "rtsp://door/1"},
        "till": {"source": "rtsp://till/1", **(till or {})},
    }
    device = Config.of(device_id="test-cam", model="local", cameras=cameras, **config)
    cameras = [FakeCamera(name, device.camera(name)) for name in ("door", "till")]
    return FakeApp(config=device, camera_list=cameras)


# ----------------------------------------------------------------------- broker


def mosquitto_path() -> Path | None:
    found = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    return Path(found) if Path(found).exists() else None


class Broker:
    """A Mosquitto broker on a free loopback port, persisting to a temp directory.

    ``users`` (name: password): only they may connect (a password file), else anyone.
    """

    def __init__(
        self, executable: Path, directory: Path, users: Mapping[str, str] | None = None
    ) -> None:
        self.executable = executable
        self.directory = directory
        self.port = free_port()
        self.config = directory / "mosquitto.conf"
        self.log = directory / "mosquitto.log"
        access = "allow_anonymous true\n"
        if users:
            passwords = directory / "passwords"
            passwords.write_text("")
            passwd = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
            for name, password in users.items():
                subprocess.run([passwd, "-b", str(passwords), name, password], check=True)
            access = f"allow_anonymous false\npassword_file {passwords}\n"
        self.config.write_text(
            f"listener {self.port} 127.0.0.1\n"
            f"{access}"
            "persistence true\n"
            f"persistence_location {directory}/\n"
            f"log_dest file {self.log}\n"
            # Run as root, mosquitto would switch to user "mosquitto", which cannot
            # write the persistence file in a private temp directory.
            f"user {getpass.getuser()}\n"
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def _accepting(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            log = self.log.read_text() if self.log.exists() else ""
            raise AssertionError(f"mosquitto exited with {self.process.returncode}: {log}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(self.executable), "-c", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._accepting, 10, "mosquitto to accept connections")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: mosquitto saves retained messages and sessions
            self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    retain: bool

    @property
    def text(self) -> str:
        return self.payload.decode()


class Subscriber:
    """A paho client on its own thread that records every message it gets."""

    def __init__(
        self,
        port: int,
        topics: Sequence[str],
        *,
        client_id: str | None = None,
        persistent: bool = False,
        login: tuple[str, str] | None = None,
    ) -> None:
        self.topics = list(topics)
        self.messages: list[Received] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id or f"test-{uuid.uuid4().hex[:8]}",
            clean_session=not persistent,
        )
        if login is not None:
            self.client.username_pw_set(*login)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        # paho's stub says int, but it only multiplies the delays; a broker restart in a
        # test should not cost a whole second of reconnect wait.
        self.client.reconnect_delay_set(0.05, 0.5)  # type: ignore[arg-type]
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.loop_start()
        if not self._subscribed.wait(10):
            raise AssertionError("test subscriber could not subscribe")

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: mqtt.ConnectFlags, *_: Any
    ) -> None:
        # A resumed session keeps its subscriptions; subscribing again would replay
        # retained messages in between the queued ones.
        if flags.session_present:
            self._subscribed.set()
        else:
            client.subscribe([(topic, 1) for topic in self.topics])

    def _on_subscribe(self, *_: Any) -> None:
        self._subscribed.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.messages.append(Received(message.topic, bytes(message.payload), message.retain))
            self._cond.notify_all()

    def latest(self) -> dict[str, bytes]:
        """Each topic's newest payload (a retained topic: what the broker holds)."""
        with self._cond:
            return {m.topic: m.payload for m in self.messages}

    def on(self, topic: str) -> list[Received]:
        with self._cond:
            return [m for m in self.messages if m.topic == topic]

    def wait_for(
        self, predicate: Callable[[list[Received]], bool], what: str, timeout: float = 10
    ) -> list[Received]:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.messages), timeout):
                seen = [(m.topic, m.payload[:80]) for m in self.messages]
                raise AssertionError(f"timed out waiting for {what}; got {seen}")
            return list(self.messages)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# ------------------------------------------------------------------ delay proxy


class DelayProxy:
    """A TCP proxy on a free loopback port that delays every byte by ``delay_s`` each way.

    What a broker on the far side of a network looks like: the round trip is the
    link's twice ``delay_s`` plus the broker's own, and the link is not a bottleneck
    (bytes in flight are not limited; only their arrival is late). It runs its own
    event loop on a thread, so the code under test shares nothing with it.
    """

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = free_port()
        self.connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="delay-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> DelayProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise AssertionError("the delay proxy did not start")
        return self

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        self._thread.join(10)

    def __enter__(self) -> DelayProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        tasks: set[asyncio.Task[None]] = set()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            except OSError:
                writer.close()
                return
            try:
                await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
            except asyncio.CancelledError:
                pass  # the proxy stops: asyncio's stream callback must not see a cancelled task
            finally:
                for w in (writer, up_writer):
                    w.close()
                tasks.discard(task)

        server = await asyncio.start_server(handle, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()
            for task in list(tasks):
                task.cancel()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Forward each chunk ``delay_s`` after it was read, in order; EOF likewise."""
        loop = asyncio.get_running_loop()
        due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            while True:
                try:
                    data = await source.read(65536)
                except OSError:
                    data = b""
                await due.put((loop.time() + self.delay_s, data))
                if not data:
                    return

        reading = asyncio.ensure_future(read())
        try:
            while True:
                at, data = await due.get()
                await asyncio.sleep(max(0.0, at - loop.time()))
                if not data:
                    # The other side closed: so does this one, as late as its bytes.
                    sink.close()
                    return
                sink.write(data)
                await sink.drain()
        except OSError:
            return
        finally:
            reading.cancel()


# ------------------------------------------------------------------- a busy scene

LINES = [f"l{i:02d}" for i in range(40)]
ZONES = [f"z{i}" for i in range(10)]


@dataclass
class Scene:
    """What a busy scene with 40 lines and 10 zones publishes, and what it ends with."""

    events: list[Event] = field(default_factory=list)
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)
    zones: dict[str, int] = field(default_factory=dict)
    count: int = 0
    crossings: int = 0

    @classmethod
    def busy(cls, crossings: int = 451, seed: int = 22) -> Scene:
        rng = random.Random(seed)
        scene = cls(totals={name: (0, 0) for name in LINES})
        track = 0
        while scene.crossings < crossings:
            roll = rng.random()
            if roll < 0.55:
                line = rng.choice(LINES)
                total_in, total_out = scene.totals[line]
                direction = rng.choice(["in", "out"])
                total_in += direction == "in"
                total_out += direction == "out"
                scene.totals[line] = (total_in, total_out)
                track += 1
                scene.events.append(
                    LineCrossed(line=line, direction=direction, track=track, t_media=0.0,
                                total_in=total_in, total_out=total_out)
                )  # fmt: skip
                scene.crossings += 1
            elif roll < 0.85:
                zone = rng.choice(ZONES)
                previous = scene.zones.get(zone)
                people = max(0, (previous or 0) + rng.choice([-1, 1]))
                scene.zones[zone] = people
                scene.events.append(
                    ZoneCount(zone=zone, people=people, previous=previous,
                              dwelling=min(people, 1), longest_s=3.0, t_media=0.0)
                )  # fmt: skip
            else:
                previous_count = scene.count
                scene.count = max(0, scene.count + rng.choice([-1, 1, 2]))
                scene.events.append(CountChanged(count=scene.count, previous=previous_count))
        return scene


@contextlib.asynccontextmanager
async def serving(app: FakeApp) -> AsyncIterator[tuple[Telemetry, str]]:
    """A status server on a free loopback port over ``app``'s telemetry, for the block."""
    telemetry = Telemetry(app)
    server = StatusServer(telemetry, HttpAddress("127.0.0.1", 0))
    server.listen()
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        try:
            yield telemetry, f"http://127.0.0.1:{server.port}"
        finally:
            tg.cancel_scope.cancel()
