"""A fake server on its own event loop in a daemon thread, for clients in a subprocess.

:class:`ThreadedServer` runs either fake (Live or REST) and turns coroutines on its loop into
blocking calls; :class:`ThreadedFakeLiveServer` is the Live fake's blocking face.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .endpoint import DEFAULT_API_KEY, DEFAULT_API_VERSION, LiveEndpoint
from .records import ClientMessage, FunctionResponseRecord, LiveConnection

if TYPE_CHECKING:
    # FakeLiveServer is named only in ThreadedFakeLiveServer's base (a string there, as the
    # server module imports this one), which ruff does not read as a use.
    from .profiles import Profile
    from .server import AfterSetup, FakeLiveServer, ToolCallSpec  # noqa: F401

__all__ = ["ThreadedFakeLiveServer", "ThreadedServer"]

T = TypeVar("T")


class _Keep:
    """Sentinel type: "leave this option unchanged"."""


class _Serving(Protocol):
    async def start(self) -> LiveEndpoint: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=_Serving)


class ThreadedServer(Generic[S]):
    """A fake server on its own event loop in a daemon thread (for subprocess tests).

    Every method is a blocking call that runs the corresponding coroutine on the server's loop
    (so state is only ever touched there). Predicates given to ``wait_for`` also run there.
    """

    what = "fake server"  # for thread names and errors

    def __init__(self, server: S) -> None:
        self.server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._endpoint: LiveEndpoint | None = None

    def start(self, timeout: float = 10.0) -> LiveEndpoint:
        started: concurrent.futures.Future[LiveEndpoint] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=asyncio.run,
            args=(self._main(started),),
            name=self.what.replace(" ", "-"),
            daemon=True,
        )
        self._thread.start()
        self._endpoint = started.result(timeout)
        return self._endpoint

    async def _main(self, started: concurrent.futures.Future[LiveEndpoint]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            endpoint = await self.server.start()
        except BaseException as exc:
            started.set_exception(exc)  # re-raised in the starting thread by start()
            return
        started.set_result(endpoint)
        try:
            await self._stop.wait()
        finally:
            await self.server.stop()

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)
        self._loop = self._stop = self._thread = None

    def call(self, fn: Callable[[], Awaitable[T]], *, timeout: float | None = 30.0) -> T:
        """Run ``fn()`` (a coroutine factory) on the server's loop and return its result."""
        if self._loop is None:
            raise RuntimeError(f"threaded {self.what} not running")

        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def _sync(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()

        return self.call(run)

    @property
    def endpoint(self) -> LiveEndpoint:
        if self._endpoint is None:
            raise RuntimeError(f"threaded {self.what} not running")
        return self._endpoint

    @property
    def port(self) -> int:
        return self.endpoint.port

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    def env(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> dict[str, str]:
        return self.endpoint.env(api_version=api_version, api_key=api_key)

    def subprocess_env(
        self,
        base: Mapping[str, str] | None = None,
        *,
        api_version: str = DEFAULT_API_VERSION,
        api_key: str = DEFAULT_API_KEY,
    ) -> dict[str, str]:
        return self.endpoint.subprocess_env(base, api_version=api_version, api_key=api_key)


class ThreadedFakeLiveServer(ThreadedServer["FakeLiveServer"]):
    """A :class:`FakeLiveServer` on its own event loop in a daemon thread."""

    what = "fake live server"

    def set_options(
        self,
        *,
        answer_setup: bool | None = None,
        setup_close_code: int | type[_Keep] | None = _Keep,
        setup_complete: Mapping[str, Any] | str | bytes | None = None,
        after_setup: AfterSetup | None = None,
        profile: Profile | None = None,
    ) -> None:
        """Change setup behaviour for the next connections (on the server's loop); a
        ``profile`` (a model family's rules) applies at once.

        ``after_setup`` (a function of the connection) also runs on the server's loop.
        """

        def apply() -> None:
            if answer_setup is not None:
                self.server.answer_setup = answer_setup
            if not isinstance(setup_close_code, type):
                self.server.setup_close_code = setup_close_code
            if setup_complete is not None:
                self.server.setup_complete = setup_complete
            if after_setup is not None:
                self.server.after_setup = after_setup
            if profile is not None:
                self.server.profile = profile

        self._sync(apply)

    def issue_token(self, *, ttl_s: float = 1800.0, uses: int = 1) -> str:
        return self._sync(lambda: self.server.issue_token(ttl_s=ttl_s, uses=uses))

    def expire_token(self, name: str) -> None:
        self._sync(lambda: self.server.expire_token(name))

    def connections(self) -> list[LiveConnection]:
        """A shallow copy of the connection list, taken on the server's loop."""
        return self._sync(lambda: list(self.server.connections))

    def connection(self, index: int | None = None) -> LiveConnection:
        return self._sync(lambda: self.server.connection(index))

    def messages(self) -> list[ClientMessage]:
        return self._sync(lambda: self.server.messages)

    def send(
        self, payload: Mapping[str, Any] | str | bytes, *, connection: int | None = None
    ) -> None:
        self.call(lambda: self.server.send(payload, connection=connection))

    def send_tool_call(
        self, *calls: ToolCallSpec | Mapping[str, Any], connection: int | None = None
    ) -> list[str]:
        return self.call(lambda: self.server.send_tool_call(*calls, connection=connection))

    def send_tool_call_cancellation(
        self, ids: Sequence[str], *, connection: int | None = None
    ) -> None:
        self.call(lambda: self.server.send_tool_call_cancellation(ids, connection=connection))

    def send_server_content(self, **kwargs: Any) -> None:
        self.call(lambda: self.server.send_server_content(**kwargs))

    def send_text(
        self, text: str, *, turn_complete: bool = True, connection: int | None = None
    ) -> None:
        self.call(
            lambda: self.server.send_text(text, turn_complete=turn_complete, connection=connection)
        )

    def send_turn_complete(self, *, connection: int | None = None) -> None:
        self.call(lambda: self.server.send_turn_complete(connection=connection))

    def send_output_transcription(self, text: str, *, connection: int | None = None) -> None:
        self.call(lambda: self.server.send_output_transcription(text, connection=connection))

    def send_resumption_update(
        self, new_handle: str | None, *, resumable: bool = True, connection: int | None = None
    ) -> None:
        self.call(
            lambda: self.server.send_resumption_update(
                new_handle, resumable=resumable, connection=connection
            )
        )

    def send_go_away(self, time_left: str = "10s", *, connection: int | None = None) -> None:
        self.call(lambda: self.server.send_go_away(time_left, connection=connection))

    def send_usage_metadata(
        self, usage: Mapping[str, Any] | None = None, *, connection: int | None = None
    ) -> None:
        self.call(lambda: self.server.send_usage_metadata(usage, connection=connection))

    def close_connection(
        self, code: int = 1000, reason: str = "", *, connection: int | None = None
    ) -> LiveConnection:
        return self.call(lambda: self.server.close_connection(code, reason, connection=connection))

    def drop_connection(self, *, connection: int | None = None) -> LiveConnection:
        return self.call(lambda: self.server.drop_connection(connection=connection))

    def wait_for(self, predicate: Callable[[], T | None], *, timeout: float = 5.0) -> T:
        return self.call(
            lambda: self.server.wait_for(predicate, timeout=timeout), timeout=timeout + 5
        )

    def wait_connection(self, n: int = 1, *, timeout: float = 5.0) -> LiveConnection:
        return self.call(
            lambda: self.server.wait_connection(n, timeout=timeout), timeout=timeout + 5
        )

    def wait_message(
        self,
        kind: str,
        *,
        connection: int | None = None,
        count: int = 1,
        where: Callable[[ClientMessage], bool] | None = None,
        timeout: float = 5.0,
    ) -> ClientMessage:
        return self.call(
            lambda: self.server.wait_message(
                kind, connection=connection, count=count, where=where, timeout=timeout
            ),
            timeout=timeout + 5,
        )

    def wait_function_response(
        self, call_id: str, *, count: int = 1, timeout: float = 5.0
    ) -> FunctionResponseRecord:
        return self.call(
            lambda: self.server.wait_function_response(call_id, count=count, timeout=timeout),
            timeout=timeout + 5,
        )

    def wait_closed(self, *, connection: int | None = None, timeout: float = 5.0) -> LiveConnection:
        return self.call(
            lambda: self.server.wait_closed(connection=connection, timeout=timeout),
            timeout=timeout + 5,
        )

    def describe(self) -> str:
        return self._sync(self.server.describe)
