"""Gemini Live as a ``live.LiveModel``, over ``client.aio.live.connect`` (google-genai 3.x).

The adapter only translates: ``LiveSetup`` to a ``LiveConnectConfig``, ``live.model``
outbound messages to the SDK's ``send_*`` calls, and every ``LiveServerMessage`` to model
events. Reconnects, the outbox and the resumption handle belong to the session; this
module opens one connection per ``connect()`` and reports how it ended, as
``ConnectionLost`` (the session may retry) or ``ModelSetupError`` (it should not).

Wire facts this relies on are in ``docs/gemini-live-wire.md``. The parts, one job each:
``models/gemini/options.py`` (``GeminiOptions``, the connect config and its defaults),
``models/gemini/client.py`` (the client, the API key and its defaults),
``models/gemini/events.py`` (server messages to model events), ``families.py`` (what each
model family takes on the wire), ``sdk_form.py`` (the runtime's messages in the SDK's types),
``wire_form.py`` (function responses in the family's form, and the kick) and
``failures.py`` (what a failure means: retry or not, said in a line). Their
public names are importable from here too, where callers have always found them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import cast

import anyio
from google import genai
from google.genai import errors, types
from google.genai.live import AsyncSession
from websockets.exceptions import ConnectionClosed

from live.model import (
    ConnectionLost,
    LiveSetup,
    ModelEvent,
    ModelSetupError,
    Outbound,
    SendActivity,
    SendContent,
    SendRealtime,
    SendText,
    SendToolResponse,
)
from models.gemini import sdk_form
from models.gemini.client import (
    API_KEY_VARIABLES,
    DEFAULT_API_VERSION,
    MissingApiKey,
    api_key_from_env,
    client_secrets,
    given_or_new_client,
    new_client,
    one_line,
    resolve_api_version,
    token_client,
)
from models.gemini.events import model_events, parse_duration
from models.gemini.failures import (
    AUTH_STATUS,
    close_code,
    connect_error,
    describe,
    refuses_credentials,
)
from models.gemini.families import Backend, Capabilities, capabilities
from models.gemini.options import DEFAULT_MODEL, GeminiOptions, default_modalities
from models.gemini.tokens import TOKEN_PREFIX, TokenRefused, TokenSource, with_fresh_token
from models.gemini.unreadable import frame_problem, tap
from models.gemini.vertex import VertexTarget
from models.gemini.wire_form import KICK, AnsweredCalls, response_text, tool_responses

log = logging.getLogger("lookout.gemini")

# A well-behaved server completes the close handshake in milliseconds; one that does not
# gets its socket aborted rather than holding the session's teardown.
_CLOSE_TIMEOUT_S = 2.0


class GeminiConnection:
    """One open Live session; implements ``live.model.LiveConnection``."""

    def __init__(
        self,
        stack: contextlib.AsyncExitStack,
        session: AsyncSession,
        secrets: Sequence[str],
        *,
        text_as_realtime: bool = False,
        image_parts: bool = False,
        family: Capabilities | None = None,
    ) -> None:
        self._text_as_realtime = text_as_realtime
        self._family = family or capabilities(DEFAULT_MODEL)
        self._answers = AnsweredCalls(self._family)
        self._image_parts = image_parts
        self._shown: dict[str, types.Blob] = {}  # a call's image, held for its answer
        self._stack = stack
        self._session = session
        self._secrets = tuple(secrets)
        self._closed = False
        # The last frame read, to tell a message of a newer protocol from garbage.
        self._tap = tap(session)

    @property
    def closed(self) -> bool:
        return self._closed

    def _lost(self, what: str, exc: BaseException, code: int | None) -> ConnectionLost:
        retryable = True
        if isinstance(exc, errors.APIError) and exc.code in AUTH_STATUS:
            # An in-band "permission denied" will be the answer to the next setup too.
            retryable = False
        detail = describe(exc, self._secrets)
        reason = f"{what} (code {code}): {detail}" if code is not None else f"{what}: {detail}"
        return ConnectionLost(reason, code=code, retryable=retryable)

    async def send(self, message: Outbound) -> None:
        if self._closed:
            raise ConnectionLost("the connection was closed", code=1000)
        try:
            await self._send(message)
        except ConnectionClosed as exc:
            raise self._lost("send failed, connection closed", exc, close_code(exc)) from None
        except errors.APIError as exc:
            raise self._lost("send failed", exc, exc.code) from None
        except OSError as exc:
            raise self._lost("send failed", exc, None) from None

    async def _send(self, message: Outbound) -> None:
        session = self._session
        if isinstance(message, SendRealtime) and message.call_id and self._image_parts:
            # The family reads images in a function response: the call's answer takes it.
            self._shown[message.call_id] = sdk_form.blob(message.blob)
        elif isinstance(message, SendRealtime):
            mime = (message.blob.mime_type or "").lower()
            if mime.startswith("image/") or mime.startswith("video/"):
                await session.send_realtime_input(video=sdk_form.blob(message.blob))
            elif mime.startswith("audio/"):
                await session.send_realtime_input(audio=sdk_form.blob(message.blob))
            else:
                raise ValueError(f"cannot send realtime input of type {mime or 'unknown'}")
        elif isinstance(message, SendText):
            await session.send_realtime_input(text=message.text)
        elif isinstance(message, SendContent) and self._text_as_realtime:
            # The family closes a session on mid-session client content (3.1: 1007); what
            # the device says (typed text, text emissions) goes as realtime text instead.
            text = " ".join(p.text for p in message.content.parts or () if p.text)
            if text:
                await session.send_realtime_input(text=text)
        elif isinstance(message, SendContent):
            await session.send_client_content(
                turns=sdk_form.content(message.content), turn_complete=message.turn_complete
            )
        elif isinstance(message, SendToolResponse):
            first, later = self._answers.split(message.responses)
            for response in later:
                # The family takes one answer per call: what follows goes as text.
                await self._say(response_text(response))
            if not first:
                return
            responses = tool_responses(map(self._with_image, first), self._family)
            await session.send_tool_response(function_responses=responses)
            if self._family.needs_kick:
                # The family may stay silent after a tool response until a realtime input
                # follows; one space makes it run and says nothing.
                await session.send_realtime_input(text=KICK)
        elif isinstance(message, SendActivity):
            if message.start:
                await session.send_realtime_input(activity_start=types.ActivityStart())
            else:
                await session.send_realtime_input(activity_end=types.ActivityEnd())
        else:
            raise TypeError(f"unknown outbound message {type(message).__name__}")

    async def _say(self, text: str) -> None:
        """Text from the device, in the form the family takes mid-session."""
        if self._text_as_realtime:
            await self._session.send_realtime_input(text=text)
        else:
            turn = types.Content(role="user", parts=[types.Part(text=text)])
            await self._session.send_client_content(turns=turn, turn_complete=False)

    def _with_image(self, response: types.FunctionResponse) -> types.FunctionResponse:
        blob = self._shown.pop(response.id or "", None)
        if blob is None:
            return response
        part = types.FunctionResponsePart(
            inline_data=types.FunctionResponseBlob(mime_type=blob.mime_type, data=blob.data)
        )
        return response.model_copy(update={"parts": [part]})

    async def receive(self) -> AsyncGenerator[ModelEvent, None]:
        """Model events until the connection ends; ``ConnectionLost`` unless we closed it.

        Whatever the server sends, this raises nothing else: a message that cannot be read
        ends the connection as a retryable loss (the session reconnects with back-off),
        except a well-formed message of a kind this SDK does not know, which is skipped.
        """
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
                        raise self._lost("connection closed", exc, close_code(exc)) from None
                    except Exception as exc:
                        # Any type at all: the SDK's parsing raises whatever the frame
                        # provokes (AttributeError, RecursionError, ValidationError...).
                        if self._closed:
                            return
                        self._unreadable(exc)
                        break
                    try:
                        events = model_events(message)
                    except Exception as exc:
                        raise self._lost("a server message could not be read", exc, None) from None
                    for event in events:
                        yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await turn.aclose()

    def _unreadable(self, exc: Exception) -> None:
        """Skip a message of a newer protocol; anything else the SDK cannot read ends us."""
        frame = self._tap.last if self._tap is not None else None
        if frame is None:
            # It failed before (or without) a frame to blame: the connection, not a message.
            raise ConnectionLost(
                one_line(f"receiving failed: {describe(exc, self._secrets)}", self._secrets)
            ) from None
        problem = frame_problem(frame)
        if problem is None:
            log.warning(
                "skipped a server message the SDK could not read: %s",
                describe(exc, self._secrets),
            )
            return
        raise ConnectionLost(
            one_line(
                f"a server message could not be read ({problem}): {describe(exc, self._secrets)}",
                self._secrets,
            )
        ) from None

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
            log.debug("closing the Live connection: %s", describe(exc, self._secrets))
        finally:
            if not clean:
                self._abort()

    def _abort(self) -> None:
        # The SDK keeps the websocket private; reaching for it beats leaking a socket.
        ws = getattr(self._session, "_ws", None)
        transport = getattr(ws, "transport", None)
        if transport is not None:
            transport.abort()


class GeminiLiveModel:
    """``live.model.LiveModel`` for Gemini Live: the Developer API (API key), or Vertex AI
    through a given Vertex client or ``vertex`` settings (its family's Vertex forms:
    models/gemini/families.py)."""

    def __init__(
        self,
        options: GeminiOptions | None = None,
        *,
        api_key: str | None = None,
        client: genai.Client | None = None,
        http_options: types.HttpOptions | None = None,
        vertex: VertexTarget | None = None,
        tokens: TokenSource | None = None,
    ) -> None:
        options = options or GeminiOptions()
        self._tokens = tokens
        self._http_options = http_options
        if tokens is not None:
            if client is not None or api_key or vertex is not None:
                raise ValueError("ephemeral tokens replace the API key, the client and Vertex AI")
            # A client per connection, for the token it is given (token_client); this one
            # only says which backend, and is never connected with.
            client, _ = token_client(TOKEN_PREFIX + "none", http_options)
        self._client, self._secrets = given_or_new_client(
            client, api_key, http_options, options.api_version, websocket_logger=True, vertex=vertex
        )
        # The client says where the model runs, and so which fields its family takes there.
        backend = Backend.VERTEX if self._client.vertexai else Backend.GEMINI_API
        if options.backend not in (None, backend):
            raise ValueError(f"options for {options.backend.value}, a client for {backend.value}")
        self.options = dataclasses.replace(options, backend=backend)
        self.name = self.options.model
        self._session_http_options: types.HttpOptions | None = None
        if client is not None and self.options.api_version and tokens is None:
            # A given client keeps its own settings; only an explicit version overrides
            # (never a token's: tokens work on v1alpha only).
            self._session_http_options = types.HttpOptions(api_version=self.options.api_version)

    @property
    def client(self) -> genai.Client:
        return self._client

    @property
    def secrets(self) -> tuple[str, ...]:
        """The key or access token the client uses: keep them out of what is shown."""
        return self._secrets

    def connect_config(self, setup: LiveSetup) -> types.LiveConnectConfig:
        config = self.options.connect_config(setup)
        if self._session_http_options is not None:
            config.http_options = self._session_http_options
        return config

    async def connect(self, setup: LiveSetup) -> GeminiConnection:
        if self._tokens is None:
            return await self._open(self._client, self._secrets, setup)
        return await with_fresh_token(
            self._tokens,
            lambda token: self._open(*token_client(token, self._http_options), setup, token=True),
        )

    async def _open(
        self,
        client: genai.Client,
        secrets: Sequence[str],
        setup: LiveSetup,
        *,
        token: bool = False,
    ) -> GeminiConnection:
        config = self.connect_config(setup)
        stack = contextlib.AsyncExitStack()
        try:
            # The SDK waits for the setup answer without a timeout; the session's own
            # deadline cancels us here, and the SDK's context manager then closes the socket.
            session = await stack.enter_async_context(
                client.aio.live.connect(model=self.options.model, config=config)
            )
        except Exception as exc:
            failure = connect_error(exc, secrets)
            if token and isinstance(failure, ModelSetupError) and refuses_credentials(exc):
                raise TokenRefused(f"the ephemeral token was refused: {failure}") from None
            raise failure from None
        conn = GeminiConnection(
            stack,
            session,
            secrets,
            text_as_realtime=self.options.text_as_realtime,
            image_parts=self.options.image_parts,
            family=self.options.capabilities,
        )
        if session.setup_complete is None:
            # The SDK silently drops a first message that is not setupComplete.
            await conn.close()
            raise ModelSetupError("the server did not confirm the session setup")
        return conn


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
