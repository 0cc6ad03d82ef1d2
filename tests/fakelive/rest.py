"""A scriptable fake of the Gemini REST ``generateContent`` endpoint, served over TLS.

The companion of the Live fake (``server.py``): the *unmodified* google-genai SDK talks to it
through ``genai.Client(http_options=endpoint.http_options())`` or through the SDK's own
environment variables (``endpoint.env()``, ``GOOGLE_GEMINI_BASE_URL`` + ``SSL_CERT_FILE``),
trusting only the throwaway CA of ``certs.py``. Wire facts: ``docs/gemini-rest-wire.md``.

* It serves ``POST /{version}/models/{model}:generateContent``; anything else gets a
  Google-style 404 and lands in ``rejected_paths``.
* It records every request (:class:`GenerateRequest`: path, version, model, API key,
  headers, parsed JSON body) with its ``time.monotonic()`` arrival time.
* It answers with the next canned response queued with :meth:`FakeGenerateServer.queue`,
  else with what ``responder(request)`` returns, else with a 500 that says nothing was
  scripted. An answer is a response dict (see :func:`text_response`,
  :func:`function_call_response`), a :class:`FakeHttpError` (:func:`error_response`) or
  :data:`NO_ANSWER` (hold the request until the client gives up or the server stops).
  A responder may be async.

Waiting is event driven (:meth:`FakeGenerateServer.wait_requests`), never a fixed sleep.
For a client in a subprocess (``lookout`` CLI), ``FakeGenerateServer.run_in_thread()`` gives
a :class:`ThreadedFakeGenerateServer` whose methods are blocking calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from google import genai

from .certs import TestCerts, make_test_certs
from .endpoint import DEFAULT_API_KEY, DEFAULT_API_VERSION, LiveEndpoint
from .threaded import ThreadedServer
from .tokens import TOKEN_VERSION
from .wire import get_field

__all__ = [
    "NO_ANSWER",
    "FakeGenerateServer",
    "FakeHttpError",
    "FunctionCallSent",
    "FunctionResponseSent",
    "GenerateRequest",
    "NoAnswer",
    "Responder",
    "ThreadedFakeGenerateServer",
    "error_response",
    "function_call_response",
    "model_response",
    "text_response",
]

T = TypeVar("T")

# The Gemini API's path, or Vertex AI's (the model as a resource of a project and location).
_PATH_RE = re.compile(
    r"^/(?P<version>[A-Za-z0-9]+)/(?:projects/[^/]+/locations/[^/]+/publishers/google/)?"
    r"models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)

# Ephemeral tokens are minted on the Gemini API's v1alpha only.
_TOKENS_RE = re.compile(rf"^/{TOKEN_VERSION}/auth_tokens$")

# google.rpc.Code names of the HTTP statuses the Gemini API answers with.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


# --------------------------------------------------------------------------------------------
# What the fake answers


@dataclass(frozen=True)
class FakeHttpError:
    """An error answer: ``{"error": {"code", "message", "status"}}`` with that HTTP status,
    or ``body`` verbatim (a str is sent as text, anything else as JSON) when given."""

    status: int
    message: str = ""
    status_name: str | None = None
    body: Any = None

    def payload(self) -> Any:
        if self.body is not None:
            return self.body
        name = self.status_name or _STATUS_NAMES.get(self.status, "UNKNOWN")
        return {"error": {"code": self.status, "message": self.message, "status": name}}


class NoAnswer:
    """Hold the request open without answering (until the client leaves or the server stops)."""

    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER = NoAnswer()

Answer = Mapping[str, Any] | FakeHttpError | NoAnswer
Responder = Callable[["GenerateRequest"], Answer | Awaitable[Answer]]


def _usage(usage: tuple[int, int, int] | None) -> dict[str, Any]:
    if usage is None:
        return {}
    prompt, candidates, total = usage
    return {
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": total,
        }
    }


def model_response(
    parts: Sequence[Mapping[str, Any]],
    *,
    finish_reason: str | None = "STOP",
    usage: tuple[int, int, int] | None = None,
    model_version: str | None = None,
) -> dict[str, Any]:
    """A ``generateContent`` response with one candidate made of ``parts`` (wire dicts).

    ``usage`` is ``(prompt, candidates, total)`` token counts.
    """
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [dict(p) for p in parts]}}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    out: dict[str, Any] = {"candidates": [candidate], **_usage(usage)}
    if model_version is not None:
        out["modelVersion"] = model_version
    return out


def text_response(
    text: str,
    *,
    finish_reason: str | None = "STOP",
    usage: tuple[int, int, int] | None = None,
) -> dict[str, Any]:
    """The model says ``text``."""
    return model_response([{"text": text}], finish_reason=finish_reason, usage=usage)


def function_call_response(
    calls: Iterable[tuple[str | None, str, Mapping[str, Any]]],
    *,
    text: str | None = None,
    thought_signature: str | None = None,
    usage: tuple[int, int, int] | None = None,
) -> dict[str, Any]:
    """The model calls functions: ``[(id or None, name, args), ...]`` (``None``: no id sent,
    as the REST API may do). ``thought_signature`` (base64) goes on the first call's part,
    where Gemini puts it; ``text`` comes before the calls."""
    parts: list[dict[str, Any]] = [{"text": text}] if text is not None else []
    for i, (call_id, name, args) in enumerate(calls):
        call: dict[str, Any] = {"name": name, "args": dict(args)}
        if call_id is not None:
            call["id"] = call_id
        part: dict[str, Any] = {"functionCall": call}
        if i == 0 and thought_signature is not None:
            part["thoughtSignature"] = thought_signature
        parts.append(part)
    return model_response(parts, usage=usage)


def error_response(status: int, message: str = "", status_name: str | None = None) -> FakeHttpError:
    """An error answer in the Gemini API's JSON shape (``status_name`` defaults by status)."""
    return FakeHttpError(status, message, status_name)


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class FunctionResponseSent:
    """A ``functionResponse`` part of the history a request carried."""

    id: str | None
    name: str | None
    response: Any
    raw: dict[str, Any]


@dataclass(frozen=True)
class FunctionCallSent:
    """A ``functionCall`` part (the model's own, sent back in the history)."""

    id: str | None
    name: str | None
    args: Any
    thought_signature: str | None
    raw: dict[str, Any]


@dataclass(frozen=True)
class GenerateRequest:
    """One request as it arrived. Accessors accept either key spelling: the SDK sends its own
    structures in camelCase but function declarations and responses in snake_case."""

    index: int
    t: float
    method: str
    path: str
    """The raw path, with any query string."""
    version: str
    model: str
    """Without the ``models/`` prefix the URL carries."""
    api_key: str | None
    """From the ``x-goog-api-key`` header (or a ``key`` query parameter)."""
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """Parsed JSON, or ``None`` when the body was not JSON."""
    raw_body: bytes = field(repr=False, default=b"")

    # -- the request's parts -----------------------------------------------------------------

    @property
    def contents(self) -> list[dict[str, Any]]:
        value = get_field(self.body, "contents", [])
        return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        value = get_field(self.body, "tools", [])
        return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []

    @property
    def generation_config(self) -> dict[str, Any]:
        value = get_field(self.body, "generation_config", {})
        return value if isinstance(value, dict) else {}

    def parts(self, role: str | None = None) -> list[dict[str, Any]]:
        """Every part of every content (of ``role`` only, when given), in order."""
        out: list[dict[str, Any]] = []
        for content in self.contents:
            if role is not None and get_field(content, "role") != role:
                continue
            out.extend(p for p in get_field(content, "parts", []) or [] if isinstance(p, dict))
        return out

    def system_instruction(self) -> str | None:
        """The system instruction's text (parts joined), ``None`` when none was sent."""
        value = get_field(self.body, "system_instruction")
        if value is None:
            return None
        if isinstance(value, str):
            return value
        texts = [get_field(p, "text") for p in get_field(value, "parts", []) or []]
        return "".join(t for t in texts if isinstance(t, str))

    def function_declarations(self) -> list[dict[str, Any]]:
        """Every function declaration of every tool, as sent."""
        out: list[dict[str, Any]] = []
        for tool in self.tools:
            declared = get_field(tool, "function_declarations", []) or []
            out.extend(d for d in declared if isinstance(d, dict))
        return out

    def declaration_names(self) -> list[str]:
        return [str(get_field(d, "name")) for d in self.function_declarations()]

    def declaration(self, name: str) -> dict[str, Any]:
        for declaration in self.function_declarations():
            if get_field(declaration, "name") == name:
                return declaration
        raise KeyError(f"no declaration {name!r} in request {self.index}")

    def function_calls(self) -> list[FunctionCallSent]:
        """The model's function calls as the history carries them back."""
        out: list[FunctionCallSent] = []
        for part in self.parts():
            call = get_field(part, "function_call")
            if isinstance(call, dict):
                signature = get_field(part, "thought_signature")
                out.append(
                    FunctionCallSent(
                        id=get_field(call, "id"),
                        name=get_field(call, "name"),
                        args=get_field(call, "args"),
                        thought_signature=signature if isinstance(signature, str) else None,
                        raw=call,
                    )
                )
        return out

    def function_responses(self) -> list[FunctionResponseSent]:
        """Every ``functionResponse`` part in the history, in order."""
        out: list[FunctionResponseSent] = []
        for part in self.parts():
            response = get_field(part, "function_response")
            if isinstance(response, dict):
                out.append(
                    FunctionResponseSent(
                        id=get_field(response, "id"),
                        name=get_field(response, "name"),
                        response=get_field(response, "response"),
                        raw=response,
                    )
                )
        return out

    def texts(self, role: str | None = None) -> list[str]:
        """Every text part (of ``role`` only, when given), in order."""
        return [t for p in self.parts(role) if isinstance(t := get_field(p, "text"), str)]

    def user_texts(self) -> list[str]:
        return self.texts("user")


# --------------------------------------------------------------------------------------------
# The server


class FakeGenerateServer:
    """The fake REST endpoint, running in the current event loop (asyncio).

    ``responder`` and ``versions`` are attributes, so a test may change them between requests.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        responses: Iterable[Answer] = (),
        certs: TestCerts | None = None,
        host: str = "127.0.0.1",
        versions: Iterable[str] = ("v1", "v1alpha", "v1beta", "v1beta1"),
    ) -> None:
        self.responder = responder
        self.versions = frozenset(versions)
        self.requests: list[GenerateRequest] = []
        self.rejected_paths: list[str] = []
        self.abandoned: list[int] = []
        """Indexes of requests whose client went away before the answer."""
        self._queued: list[Answer] = list(responses)
        self._certs = certs
        self._host = host
        self._runner: web.AppRunner | None = None
        self._endpoint: LiveEndpoint | None = None
        self._own_cert_dir: Path | None = None
        self._changed_event = asyncio.Event()
        self._stopping = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> LiveEndpoint:
        if self._runner is not None:
            raise RuntimeError("already started")
        certs = self._certs
        if certs is None:
            certs = make_test_certs()
            self._own_cert_dir = certs.directory
        self._changed_event = asyncio.Event()
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a request the client abandons (its timeout) ends here too.
        runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=2.0, access_log=None
        )
        await runner.setup()
        site = web.TCPSite(runner, self._host, 0, ssl_context=certs.server_ssl_context())
        await site.start()
        self._runner = runner
        port = int(runner.addresses[0][1])
        self._endpoint = LiveEndpoint(self._host, port, certs)
        return self._endpoint

    async def stop(self) -> None:
        if self._runner is None:
            return
        self._stopping.set()
        await self._runner.cleanup()
        self._runner = None
        if self._own_cert_dir is not None:
            shutil.rmtree(self._own_cert_dir, ignore_errors=True)
            self._own_cert_dir = None

    async def __aenter__(self) -> FakeGenerateServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @classmethod
    @contextlib.contextmanager
    def run_in_thread(cls, *args: Any, **options: Any) -> Iterator[ThreadedFakeGenerateServer]:
        """Run a fake on its own event loop in a background thread (for subprocess clients).

        Arguments are :class:`FakeGenerateServer`'s; a responder then runs in that thread.
        """
        threaded = ThreadedFakeGenerateServer(cls(*args, **options))
        threaded.start()
        try:
            yield threaded
        finally:
            threaded.stop()

    # -- how a client finds it ---------------------------------------------------------------

    @property
    def endpoint(self) -> LiveEndpoint:
        if self._endpoint is None:
            raise RuntimeError("server not started")
        return self._endpoint

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    def client(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> genai.Client:
        return self.endpoint.client(api_version=api_version, api_key=api_key)

    def env(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> dict[str, str]:
        return self.endpoint.env(api_version=api_version, api_key=api_key)

    # -- scripting ---------------------------------------------------------------------------

    def queue(self, *answers: Answer) -> None:
        """Answer the next requests with these, in order (before the responder is asked)."""
        self._queued.extend(answers)

    @property
    def queued(self) -> int:
        return len(self._queued)

    # -- waiting -----------------------------------------------------------------------------

    def _changed(self) -> None:
        self._changed_event.set()
        self._changed_event = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], T | None], *, timeout: float = 5.0) -> T:
        """Wait until ``predicate()`` is truthy (re-checked on every request) and return it."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    event = self._changed_event
                    value = predicate()
                    if value:
                        return value
                    await event.wait()
        except TimeoutError:
            raise TimeoutError(
                f"fake generate: condition not met within {timeout}s; {self.describe()}"
            ) from None

    async def wait_requests(self, n: int = 1, *, timeout: float = 5.0) -> GenerateRequest:
        """Wait for the ``n``-th (1-based) request and return it."""
        return await self.wait_for(
            lambda: self.requests[n - 1] if len(self.requests) >= n else None, timeout=timeout
        )

    def describe(self) -> str:
        models = [f"{r.model}@{r.version}" for r in self.requests]
        return (
            f"{len(self.requests)} request(s) {models}, {len(self._queued)} queued, "
            f"rejected paths {self.rejected_paths}"
        )

    # -- request handling --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST" and _TOKENS_RE.match(re.sub(r"/{2,}", "/", request.path)):
            return await self._mint(request)
        match = _PATH_RE.match(re.sub(r"/{2,}", "/", request.path))
        if (
            request.method != "POST"
            or match is None
            or match["version"] not in self.versions
            or match["method"] != "generateContent"
        ):
            self.rejected_paths.append(request.path_qs)
            self._changed()
            return self._error(FakeHttpError(404, f"fake generate: no route {request.path}"))
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        record = GenerateRequest(
            index=len(self.requests),
            t=time.monotonic(),
            method=request.method,
            path=request.path_qs,
            version=match["version"],
            model=match["model"],
            api_key=headers.get("x-goog-api-key") or request.query.get("key"),
            headers=headers,
            body=body,
            raw_body=raw,
        )
        self.requests.append(record)
        self._changed()
        try:
            answer = await self._answer(record)
            if isinstance(answer, NoAnswer):
                await self._stopping.wait()
                return self._error(FakeHttpError(503, "fake generate: server stopping"))
        except asyncio.CancelledError:
            self.abandoned.append(record.index)
            self._changed()
            raise
        if isinstance(answer, FakeHttpError):
            return self._error(answer)
        return web.json_response(dict(answer))

    async def _mint(self, request: web.Request) -> web.StreamResponse:
        """``auth_tokens.create``: recorded (model ``auth_tokens``) and answered with a new
        token's name, as the service answers (an ``AuthToken``)."""
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        record = GenerateRequest(
            index=len(self.requests), t=time.monotonic(), method=request.method,
            path=request.path_qs, version=TOKEN_VERSION, model="auth_tokens",
            api_key=headers.get("x-goog-api-key"), headers=headers, body=body, raw_body=raw,
        )  # fmt: skip
        self.requests.append(record)
        self._changed()
        return web.json_response({"name": f"auth_tokens/fake-minted-{record.index}"})

    async def _answer(self, record: GenerateRequest) -> Answer:
        if self._queued:
            return self._queued.pop(0)
        if self.responder is None:
            return FakeHttpError(500, f"fake generate: nothing scripted for request {record.index}")
        answer = self.responder(record)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    @staticmethod
    def _error(error: FakeHttpError) -> web.Response:
        payload = error.payload()
        if isinstance(payload, str | bytes):
            return web.Response(status=error.status, body=payload, content_type="text/plain")
        return web.json_response(payload, status=error.status)


class ThreadedFakeGenerateServer(ThreadedServer["FakeGenerateServer"]):
    """A :class:`FakeGenerateServer` on its own event loop in a daemon thread.

    Methods are blocking calls that run on the server's loop, so its state is only touched
    there; ``requests`` returns a snapshot.
    """

    what = "fake generate server"

    @property
    def requests(self) -> list[GenerateRequest]:
        return self._sync(lambda: list(self.server.requests))

    @property
    def rejected_paths(self) -> list[str]:
        return self._sync(lambda: list(self.server.rejected_paths))

    def queue(self, *answers: Answer) -> None:
        self._sync(lambda: self.server.queue(*answers))

    def set_responder(self, responder: Responder | None) -> None:
        """Replace the responder (it runs on the server's thread)."""

        def assign() -> None:
            self.server.responder = responder

        self._sync(assign)

    def wait_requests(self, n: int = 1, *, timeout: float = 10.0) -> GenerateRequest:
        return self.call(lambda: self.server.wait_requests(n, timeout=timeout), timeout=timeout + 5)

    def wait_for(self, predicate: Callable[[], T | None], *, timeout: float = 10.0) -> T:
        """Blocking :meth:`FakeGenerateServer.wait_for`; ``predicate`` runs on the server's loop."""
        return self.call(
            lambda: self.server.wait_for(predicate, timeout=timeout), timeout=timeout + 5
        )
