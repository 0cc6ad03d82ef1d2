"""Gemini Live as a ``live.LiveModel``, over ``client.aio.live.connect`` (google-genai 3.x).

The adapter only translates: ``LiveSetup`` to a ``LiveConnectConfig``, ``live.model``
outbound messages to the SDK's ``send_*`` calls, and every ``LiveServerMessage`` to model
events. Reconnects, the outbox and the resumption handle belong to the session; this
module opens one connection per ``connect()`` and reports how it ended, as
``ConnectionLost`` (the session may retry) or ``ModelSetupError`` (it should not).

Wire facts this relies on are in ``docs/gemini-live-wire.md``.

Defaults, and why:

* Response modalities (``GeminiOptions.response_modalities is None``): ``TEXT`` for a
  Gemini 1.x/2.x model whose name does not mention audio (the half-cascade Live models,
  which accept TEXT), else ``AUDIO``: native-audio models and the 3.x+ Live models only
  accept AUDIO, and AUDIO is accepted by every Live model, so it is also the choice for a
  name we cannot read a version from. With AUDIO, output transcription is requested so
  the session still gets text.
* API version (``GeminiOptions.api_version is None``): ``GOOGLE_GENAI_API_VERSION`` when
  set (``beta`` meaning ``v1beta``, as the SDK reads it), else ``v1beta``, the version the
  Live API is documented on. The SDK's own default would be ``v1``.
* API key: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY`` (the SDK's own precedence; it warns
  when both are set). Empty values count as unset.
* A ``genai.Client`` passed in is used as it is (its base URL, TLS and version); only an
  explicit ``GeminiOptions.api_version`` overrides its version, per connection. Without
  one, the model builds the client the way the SDK documents, so ``GOOGLE_GEMINI_BASE_URL``
  and ``SSL_CERT_FILE`` apply (read once, when the model is created).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio
from google import genai
from google.genai import errors, types
from google.genai.live import AsyncSession
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from live.model import (
    ConnectionLost,
    FunctionCallRequest,
    LiveSetup,
    ModelAudioOut,
    ModelEvent,
    ModelGoAway,
    ModelInterrupted,
    ModelResumptionUpdate,
    ModelSetupError,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTranscriptOut,
    ModelTurnComplete,
    ModelUsage,
    Outbound,
    SendActivity,
    SendContent,
    SendRealtime,
    SendText,
    SendToolResponse,
)
from live.redact import redact

log = logging.getLogger("lookout.gemini")

DEFAULT_MODEL = "gemini-3.8-live"
DEFAULT_API_VERSION = "v1beta"
API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

# Close codes with which the service refuses a setup it will refuse again (1007: invalid
# payload such as a bad key or an unsupported modality, 1008: policy, e.g. unknown model).
_REFUSAL_CLOSE_CODES = frozenset({1007, 1008})
# HTTP answers to the WebSocket upgrade that a retry cannot change.
_REFUSAL_HTTP_STATUS = frozenset({400, 401, 403, 404})
_AUTH_STATUS = frozenset({401, 403})
_MODALITIES = {"TEXT": types.Modality.TEXT, "AUDIO": types.Modality.AUDIO}
_VERSION_RE = re.compile(r"gemini-(?:live-)?(\d+)")
# A well-behaved server completes the close handshake in milliseconds; one that does not
# gets its socket aborted rather than holding the session's teardown.
_CLOSE_TIMEOUT_S = 2.0
_DETAIL_LIMIT = 200


class MissingApiKey(Exception):
    """No API key was given and none is set in the environment."""

    def __init__(self) -> None:
        super().__init__(
            "no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, which takes "
            "precedence) or pass an API key"
        )


def api_key_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    """The API key the SDK would pick: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY``."""
    for name in API_KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def resolve_api_version(
    api_version: str | None = None, environ: Mapping[str, str] = os.environ
) -> str:
    """``api_version``, else ``GOOGLE_GENAI_API_VERSION`` (``beta`` = ``v1beta``), else v1beta."""
    if api_version:
        return api_version
    env = environ.get("GOOGLE_GENAI_API_VERSION", "").strip()
    if env == "beta":
        return "v1beta"
    return env or DEFAULT_API_VERSION


def default_modalities(model: str) -> tuple[str, ...]:
    """The response modality a model name gets when none is configured (see module doc)."""
    name = model.lower()
    if "audio" in name:
        return ("AUDIO",)
    match = _VERSION_RE.search(name)
    if match is not None and int(match.group(1)) < 3:
        return ("TEXT",)
    return ("AUDIO",)


def _media_resolution(value: str) -> types.MediaResolution:
    name = value.strip().upper()
    if not name.startswith("MEDIA_RESOLUTION_"):
        name = f"MEDIA_RESOLUTION_{name}"
    try:
        return types.MediaResolution[name]
    except KeyError:
        choices = ", ".join(m.name.removeprefix("MEDIA_RESOLUTION_") for m in types.MediaResolution)
        raise ValueError(f"unknown media resolution {value!r} (one of {choices})") from None


@dataclass(frozen=True)
class GeminiOptions:
    model: str = DEFAULT_MODEL
    # None: by model name (see default_modalities).
    response_modalities: tuple[str, ...] | None = None
    # LOW: 64 tokens per image, plenty for "how many people" and cheap at 1 fps.
    media_resolution: str = "LOW"
    # Sliding-window compression lets a session outlive the context window.
    context_compression: bool = True
    # None: GOOGLE_GENAI_API_VERSION, else v1beta (see resolve_api_version).
    api_version: str | None = None
    # A prebuilt voice name; only used with AUDIO responses.
    voice: str | None = None

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("model name is empty")
        unknown = [m for m in self.response_modalities or () if m.upper() not in _MODALITIES]
        if unknown or self.response_modalities == ():
            raise ValueError(
                f"unknown response modalities {list(self.response_modalities or ())}; "
                f"use TEXT or AUDIO"
            )
        _media_resolution(self.media_resolution)

    @property
    def modalities(self) -> tuple[str, ...]:
        chosen = self.response_modalities or default_modalities(self.model)
        return tuple(m.upper() for m in chosen)

    def connect_config(self, setup: LiveSetup) -> types.LiveConnectConfig:
        """The SDK config for one connection: tools, modalities, compression, resumption."""
        modalities = self.modalities
        audio = "AUDIO" in modalities
        config = types.LiveConnectConfig(
            response_modalities=[_MODALITIES[m] for m in modalities],
            media_resolution=_media_resolution(self.media_resolution),
            # Always on: without it the server sends no resumption handles, and a fresh
            # session (handle None) is how every session starts.
            session_resumption=types.SessionResumptionConfig(handle=setup.resumption_handle),
        )
        if setup.system_instruction:
            config.system_instruction = setup.system_instruction
        if setup.tools:
            config.tools = [types.Tool(function_declarations=list(setup.tools))]
        if audio:
            config.output_audio_transcription = types.AudioTranscriptionConfig()
            if self.voice:
                config.speech_config = types.SpeechConfig(
                    voice_config=types.VoiceConfig(
                        prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=self.voice)
                    )
                )
        if self.context_compression:
            config.context_window_compression = types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            )
        return config


class _RedactingLogger(logging.LoggerAdapter[logging.Logger]):
    """Hands websockets a logger that cannot print the key.

    websockets logs every request header at DEBUG, ``x-goog-api-key`` included, so
    ``--debug`` would otherwise write the key into the log.
    """

    def __init__(self, logger: logging.Logger, secrets: Sequence[str]) -> None:
        super().__init__(logger, {})
        self._secrets = tuple(secrets)

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = " ".join([str(msg), *map(str, args)])
        # Report websockets' line, not this one.
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        self.logger.log(level, "%s", redact(text, self._secrets), **kwargs)


def parse_duration(value: object) -> float | None:
    """Seconds from a protobuf Duration as the SDK leaves it ("10s", "0.5s") or a number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        try:
            return float(value.get("seconds", 0)) + float(value.get("nanos", 0)) / 1e9
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip().removesuffix("s")
        try:
            return float(text)
        except ValueError:
            return None
    return None


def model_events(message: types.LiveServerMessage) -> list[ModelEvent]:
    """Every model event in one server message, GoAway last.

    The session stops reading at a GoAway, so anything after it in the same message
    (a final resumption handle in particular) would be lost if it came first.
    """
    events: list[ModelEvent] = []
    content = message.server_content
    if content is not None:
        if content.input_transcription is not None and content.input_transcription.text:
            events.append(ModelTranscriptOut(content.input_transcription.text, "input"))
        turn = content.model_turn
        for part in (turn.parts or []) if turn is not None else []:
            if part.thought:
                continue  # the model's reasoning is not something it said
            if part.text:
                events.append(ModelTextOut(part.text))
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                events.append(ModelAudioOut(blob.data, blob.mime_type or "audio/pcm"))
        if content.output_transcription is not None and content.output_transcription.text:
            events.append(ModelTranscriptOut(content.output_transcription.text, "output"))
        if content.interrupted:
            events.append(ModelInterrupted())
        if content.turn_complete:
            events.append(ModelTurnComplete())
    if message.tool_call is not None and message.tool_call.function_calls:
        calls = []
        for call in message.tool_call.function_calls:
            call_id = call.id
            if not call_id:
                # The Gemini API always sends ids; without one no answer could be matched.
                call_id = f"missing-id-{uuid.uuid4().hex[:12]}"
                log.warning("function call %s without an id; answering as %s", call.name, call_id)
            calls.append(FunctionCallRequest(call_id, call.name or "", dict(call.args or {})))
        events.append(ModelToolCall(tuple(calls)))
    cancellation = message.tool_call_cancellation
    if cancellation is not None and cancellation.ids:
        events.append(ModelToolCancellation(tuple(cancellation.ids)))
    update = message.session_resumption_update
    if update is not None:
        events.append(ModelResumptionUpdate(update.new_handle, bool(update.resumable)))
    usage = message.usage_metadata
    if usage is not None:
        events.append(
            ModelUsage(
                prompt_tokens=usage.prompt_token_count or 0,
                response_tokens=usage.response_token_count or 0,
                total_tokens=usage.total_token_count or 0,
            )
        )
    if message.go_away is not None:
        events.append(ModelGoAway(parse_duration(message.go_away.time_left)))
    return events


def _close_code(exc: ConnectionClosed) -> int:
    frame = exc.rcvd or exc.sent
    return frame.code if frame is not None else 1006


class GeminiConnection:
    """One open Live session; implements ``live.model.LiveConnection``."""

    def __init__(
        self, stack: contextlib.AsyncExitStack, session: AsyncSession, secrets: Sequence[str]
    ) -> None:
        self._stack = stack
        self._session = session
        self._secrets = tuple(secrets)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _lost(self, what: str, exc: BaseException, code: int | None) -> ConnectionLost:
        retryable = True
        if isinstance(exc, errors.APIError) and exc.code in _AUTH_STATUS:
            # An in-band "permission denied" will be the answer to the next setup too.
            retryable = False
        detail = _describe(exc, self._secrets)
        reason = f"{what} (code {code}): {detail}" if code is not None else f"{what}: {detail}"
        return ConnectionLost(reason, code=code, retryable=retryable)

    async def send(self, message: Outbound) -> None:
        if self._closed:
            raise ConnectionLost("the connection was closed", code=1000)
        try:
            await self._send(message)
        except ConnectionClosed as exc:
            raise self._lost("send failed, connection closed", exc, _close_code(exc)) from None
        except errors.APIError as exc:
            raise self._lost("send failed", exc, exc.code) from None
        except OSError as exc:
            raise self._lost("send failed", exc, None) from None

    async def _send(self, message: Outbound) -> None:
        session = self._session
        if isinstance(message, SendRealtime):
            mime = (message.blob.mime_type or "").lower()
            if mime.startswith("image/") or mime.startswith("video/"):
                await session.send_realtime_input(video=message.blob)
            elif mime.startswith("audio/"):
                await session.send_realtime_input(audio=message.blob)
            else:
                raise ValueError(f"cannot send realtime input of type {mime or 'unknown'}")
        elif isinstance(message, SendText):
            await session.send_realtime_input(text=message.text)
        elif isinstance(message, SendContent):
            await session.send_client_content(
                turns=message.content, turn_complete=message.turn_complete
            )
        elif isinstance(message, SendToolResponse):
            await session.send_tool_response(function_responses=list(message.responses))
        elif isinstance(message, SendActivity):
            if message.start:
                await session.send_realtime_input(activity_start=types.ActivityStart())
            else:
                await session.send_realtime_input(activity_end=types.ActivityEnd())
        else:
            raise TypeError(f"unknown outbound message {type(message).__name__}")

    async def receive(self) -> AsyncGenerator[ModelEvent, None]:
        """Model events until the connection ends; ``ConnectionLost`` unless we closed it."""
        while not self._closed:
            # session.receive() ends after each turn, and after an exception: start a new
            # one each time (the websocket underneath stays open).
            turn = cast(AsyncGenerator[types.LiveServerMessage, None], self._session.receive())
            try:
                while True:
                    try:
                        message = await anext(turn)
                    except StopAsyncIteration:
                        break
                    except errors.APIError as exc:
                        if self._closed:
                            return
                        if exc.code is not None and exc.code < 1000:
                            # An in-band error message ({"code": 503, ...}) rather than a close.
                            raise self._lost(
                                "the server reported an error", exc, exc.code
                            ) from None
                        raise self._lost(
                            "the server closed the connection", exc, exc.code
                        ) from None
                    except ConnectionClosed as exc:
                        if self._closed:
                            return
                        raise self._lost("connection closed", exc, _close_code(exc)) from None
                    except (TypeError, ValueError) as exc:
                        # Unknown-only keys (TypeError inside the SDK's error path) or bad
                        # JSON: one bad message, the connection is still fine.
                        log.warning(
                            "skipped a server message the SDK could not read: %s",
                            _describe(exc, self._secrets),
                        )
                        break
                    for event in model_events(message):
                        yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await turn.aclose()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        clean = False
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT_S):
                await self._stack.aclose()
                clean = True
        except Exception as exc:
            log.debug("closing the Live connection: %s", _describe(exc, self._secrets))
        finally:
            if not clean:
                self._abort()

    def _abort(self) -> None:
        # The SDK keeps the websocket private; reaching for it beats leaking a socket.
        ws = getattr(self._session, "_ws", None)
        transport = getattr(ws, "transport", None)
        if transport is not None:
            transport.abort()


def _describe(exc: BaseException, secrets: Sequence[str]) -> str:
    """``<Type>: <reason>`` on one line, secrets removed before it is cut short."""
    if isinstance(exc, errors.APIError):
        details = exc.message or exc.details
        text = str(details) if details not in (None, "") else (exc.status or "")
    elif isinstance(exc, ConnectionClosed):
        frame = exc.rcvd or exc.sent
        text = frame.reason if frame is not None and frame.reason else str(exc)
    else:
        text = str(exc)
    text = redact(" ".join(text.split()), secrets)
    if len(text) > _DETAIL_LIMIT:
        # Reasons end up in events and logs; a bad frame can be megabytes long.
        text = text[: _DETAIL_LIMIT - 1] + "…"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def client_secrets(client: genai.Client, api_key: str | None = None) -> tuple[str, ...]:
    """The API key a client handed in uses, to keep it out of messages and logs."""
    key = api_key or getattr(getattr(client, "_api_client", None), "api_key", None)
    return (key,) if isinstance(key, str) and key else ()


def new_client(
    api_key: str | None,
    http_options: types.HttpOptions | None,
    api_version: str | None,
    *,
    websocket_logger: bool = False,
) -> tuple[genai.Client, str]:
    """A Gemini Developer API client and the key it uses (see the module doc for defaults).

    ``websocket_logger``: route the websocket library's log through a filter that
    removes the key (Live only; REST clients take no such argument).
    """
    key = (api_key or "").strip() or api_key_from_env()
    if not key:
        raise MissingApiKey()
    options = http_options.model_copy() if http_options is not None else types.HttpOptions()
    if not options.api_version or api_version:
        options.api_version = resolve_api_version(api_version)
    if websocket_logger:
        args = dict(options.async_client_args or {})
        args.setdefault("logger", _RedactingLogger(logging.getLogger("websockets.client"), [key]))
        options.async_client_args = args
    # Base URL and CA file come from the SDK's own environment variables
    # (GOOGLE_GEMINI_BASE_URL, SSL_CERT_FILE), read here, once.
    return genai.Client(vertexai=False, api_key=key, http_options=options), key


class GeminiLiveModel:
    """``live.model.LiveModel`` for the Gemini Developer API (API key; not Vertex)."""

    def __init__(
        self,
        options: GeminiOptions | None = None,
        *,
        api_key: str | None = None,
        client: genai.Client | None = None,
        http_options: types.HttpOptions | None = None,
    ) -> None:
        self.options = options or GeminiOptions()
        self.name = self.options.model
        self._session_http_options: types.HttpOptions | None = None
        if client is not None:
            self._client = client
            self._secrets: tuple[str, ...] = client_secrets(client, api_key)
            if self.options.api_version:
                # A given client keeps its own settings; only an explicit version overrides.
                self._session_http_options = types.HttpOptions(api_version=self.options.api_version)
            return
        self._client, key = new_client(
            api_key, http_options, self.options.api_version, websocket_logger=True
        )
        self._secrets = (key,)

    @property
    def client(self) -> genai.Client:
        return self._client

    def connect_config(self, setup: LiveSetup) -> types.LiveConnectConfig:
        config = self.options.connect_config(setup)
        if self._session_http_options is not None:
            config.http_options = self._session_http_options
        return config

    async def connect(self, setup: LiveSetup) -> GeminiConnection:
        config = self.connect_config(setup)
        stack = contextlib.AsyncExitStack()
        try:
            # The SDK waits for the setup answer without a timeout; the session's own
            # deadline cancels us here, and the SDK's context manager then closes the socket.
            session = await stack.enter_async_context(
                self._client.aio.live.connect(model=self.options.model, config=config)
            )
        except Exception as exc:
            raise self._connect_error(exc) from None
        conn = GeminiConnection(stack, session, self._secrets)
        if session.setup_complete is None:
            # The SDK silently drops a first message that is not setupComplete.
            await conn.close()
            raise ModelSetupError("the server did not confirm the session setup")
        return conn

    def _connect_error(self, exc: Exception) -> Exception:
        """``ModelSetupError`` when a retry would be refused the same way, else ConnectionLost."""
        detail = _describe(exc, self._secrets)
        if isinstance(exc, errors.APIError):
            if exc.code in _REFUSAL_CLOSE_CODES or exc.code in _AUTH_STATUS:
                return ModelSetupError(f"setup refused (code {exc.code}): {detail}")
            return ConnectionLost(
                f"connection closed during setup (code {exc.code}): {detail}", code=exc.code
            )
        if isinstance(exc, InvalidStatus):
            status = exc.response.status_code
            message = f"WebSocket upgrade refused with HTTP {status}"
            if status in _REFUSAL_HTTP_STATUS:
                return ModelSetupError(message)
            return ConnectionLost(message)
        if isinstance(exc, InvalidURI):
            return ModelSetupError(f"bad Live endpoint: {detail}")
        if isinstance(exc, InvalidHandshake | ConnectionClosed | OSError):
            # OSError covers refused connections, DNS and TLS failures (ssl.SSLError).
            return ConnectionLost(f"could not connect: {detail}")
        if isinstance(exc, TypeError | ValueError):
            return ModelSetupError(f"bad setup: {detail}")
        return exc


__all__ = [
    "API_KEY_VARIABLES",
    "DEFAULT_API_VERSION",
    "DEFAULT_MODEL",
    "GeminiConnection",
    "GeminiLiveModel",
    "GeminiOptions",
    "MissingApiKey",
    "api_key_from_env",
    "client_secrets",
    "default_modalities",
    "model_events",
    "new_client",
    "parse_duration",
    "resolve_api_version",
]
