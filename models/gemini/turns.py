"""Gemini as a ``live.turns.model.TurnModel``, over ``client.aio.models.generate_content``.

One ``generate()`` is one REST ``generateContent`` request (google-genai 3.x): the whole
history, the system instruction and the function declarations go in; the first candidate's
text and function calls come back, with the candidate's content kept as it is, so thought
signatures go back into the history. Wire facts: ``docs/gemini-rest-wire.md``.

Decisions:

* The client is built the way ``GeminiLiveModel`` builds it (``models/gemini/client.py``):
  the API key from the argument, else ``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``; ``genai.Client(
  vertexai=False, ...)``, so ``GOOGLE_GEMINI_BASE_URL``, ``GOOGLE_GENAI_API_VERSION`` and
  ``SSL_CERT_FILE`` apply (read once, here); API version v1beta unless configured. A given
  client is used as it is; only an explicit ``api_version`` overrides its version.
* Automatic function calling is off: the runner executes the calls.
* The SDK does not retry: every request asks for one attempt, which also turns off the SDK's
  hidden retry after a connection error (a 1-10 s sleep, then one more try). Retrying is the
  runner's decision, from ``TurnModelError.retryable``.
* ``behavior`` (``NON_BLOCKING``, a Live API setting) is removed from the declarations sent:
  ``generateContent`` has no asynchronous calls.
* Each request has a deadline (``timeout_s``); missing it is a retryable ``TurnModelError``.
"""

from __future__ import annotations

import json
import ssl

import aiohttp
import anyio
from google import genai
from google.genai import errors, types

from live import wire
from live.model import FunctionCallRequest, ModelUsage
from live.turns.model import TurnModelError, TurnReply, TurnRequest
from models.gemini import sdk_form
from models.gemini.client import given_or_new_client, one_line
from models.gemini.events import by_modality
from models.gemini.vertex import VertexTarget

DEFAULT_TURN_MODEL = "gemini-3.8-flash"
DEFAULT_TIMEOUT_S = 60.0

# Statuses a retry can change: throttling, server faults, gateway timeouts.
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Finish reasons with nothing usable in the candidate; the malformed ones may go better on
# a second try. Every other reason (STOP, MAX_TOKENS, unspecified) is a normal answer.
_RETRYABLE_FINISH = frozenset({"MALFORMED_FUNCTION_CALL", "MALFORMED_RESPONSE"})
_NORMAL_FINISH = frozenset({"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"})


def _is_httpx_transport_error(exc: BaseException) -> bool:
    """An ``httpx``/``httpx2`` ``TransportError`` (the SDK's transport when aiohttp is absent;
    which of the two depends on the SDK version, so neither is imported)."""
    return any(
        cls.__name__ == "TransportError" and cls.__module__.partition(".")[0] in ("httpx", "httpx2")
        for cls in type(exc).__mro__
    )


def _enum_name(value: object) -> str:
    return str(getattr(value, "name", value))


def rest_declaration(
    declaration: wire.FunctionDeclaration | types.FunctionDeclaration,
) -> types.FunctionDeclaration:
    """``declaration`` in the SDK's form without ``behavior`` (Live only), the caller's left
    as it is."""
    declaration = sdk_form.declaration(declaration)
    if declaration.behavior is None:
        return declaration
    return declaration.model_copy(update={"behavior": None})


def reply_from_response(response: types.GenerateContentResponse) -> TurnReply:
    """The first candidate as a ``TurnReply``; ``TurnModelError`` when there is no answer."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
        raise TurnModelError(
            one_line(f"prompt blocked ({_enum_name(feedback.block_reason)}){detail}", ())
        )
    if not response.candidates:
        raise TurnModelError("the model returned no candidates", retryable=True)
    candidate = response.candidates[0]
    reason = _enum_name(candidate.finish_reason) if candidate.finish_reason else None
    if reason is not None and reason not in _NORMAL_FINISH:
        detail = f": {candidate.finish_message}" if candidate.finish_message else ""
        raise TurnModelError(
            one_line(f"the model stopped without an answer ({reason}){detail}", ()),
            retryable=reason in _RETRYABLE_FINISH,
        )
    content = candidate.content
    parts = (content.parts or []) if content is not None else []
    texts: list[str] = []
    calls: list[FunctionCallRequest] = []
    for part in parts:
        if part.function_call is not None:
            call = part.function_call
            calls.append(FunctionCallRequest(call.id or "", call.name or "", dict(call.args or {})))
        elif part.text and not part.thought:
            texts.append(part.text)
    if not texts and not calls:
        # Nothing to say and nothing to do is no answer, whatever the reason (a shape the SDK
        # read as empty, only thoughts, an empty text): never an empty success.
        raise TurnModelError("the model's reply had no text and no function call", retryable=True)
    usage = None
    meta = response.usage_metadata
    if meta is not None:
        usage = ModelUsage(
            prompt_tokens=meta.prompt_token_count or 0,
            response_tokens=meta.candidates_token_count or 0,
            total_tokens=meta.total_token_count or 0,
            prompt_by_modality=by_modality(meta.prompt_tokens_details),
        )
    return TurnReply(
        text="".join(texts),
        calls=tuple(calls),
        usage=usage,
        content=sdk_form.reply_content(content) if content is not None and parts else None,
    )


class GeminiTurnModel:
    """``live.turns.model.TurnModel`` for the Gemini Developer API (API key), or Vertex AI
    (``vertex`` settings, application default credentials)."""

    def __init__(
        self,
        model: str = DEFAULT_TURN_MODEL,
        *,
        api_key: str | None = None,
        client: genai.Client | None = None,
        http_options: types.HttpOptions | None = None,
        api_version: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        vertex: VertexTarget | None = None,
    ) -> None:
        if not model.strip():
            raise ValueError("model name is empty")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s}")
        self.name = model
        self.timeout_s = timeout_s
        # Per request: one attempt (see module doc), plus an explicit version for a given client.
        self._request_options = types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1))
        self._owns_client = client is None
        self._client, self._secrets = given_or_new_client(
            client, api_key, http_options, api_version, vertex=vertex
        )
        if client is not None and api_version:
            self._request_options.api_version = api_version

    @property
    def client(self) -> genai.Client:
        return self._client

    async def aclose(self) -> None:
        """Close the connection pool of a client this model built (a given one is left open)."""
        if self._owns_client:
            await self._client.aio.aclose()

    def config(self, request: TurnRequest) -> types.GenerateContentConfig:
        """The SDK config for one request."""
        config = types.GenerateContentConfig(
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            http_options=self._request_options.model_copy(deep=True),
        )
        if request.system_instruction:
            config.system_instruction = request.system_instruction
        if request.declarations:
            declarations = [rest_declaration(d) for d in request.declarations]
            config.tools = [types.Tool(function_declarations=declarations)]
        return config

    async def generate(self, request: TurnRequest) -> TurnReply:
        config = self.config(request)
        try:
            with anyio.fail_after(self.timeout_s):
                response = await self._client.aio.models.generate_content(
                    model=self.name,
                    contents=[sdk_form.content(c) for c in request.contents],
                    config=config,
                )
        except Exception as exc:
            raise self._error(exc) from None
        return reply_from_response(response)

    def _error(self, exc: Exception) -> TurnModelError:
        if isinstance(exc, errors.APIError):
            detail = exc.message or (exc.details if exc.details not in (None, "") else "")
            status = f"HTTP {exc.code} {exc.status or ''}".rstrip()
            text = f"{status}: {detail}" if detail else status
            retryable = exc.code in _RETRYABLE_STATUS
        elif isinstance(exc, TimeoutError):
            text = f"no answer within {self.timeout_s:g} s"
            retryable = True
        elif isinstance(exc, ssl.SSLCertVerificationError):
            # Also aiohttp's ClientConnectorCertificateError: an untrusted certificate stays
            # untrusted on the next try.
            text, retryable = f"TLS: {exc}", False
        elif isinstance(exc, aiohttp.ClientError | OSError) or _is_httpx_transport_error(exc):
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            retryable = True
            # Nothing answered at all (DNS, refused, no route): not a reply from Gemini.
            unreachable = isinstance(exc, aiohttp.ClientConnectorError | ConnectionError) or (
                _is_httpx_transport_error(exc) and "Connect" in type(exc).__name__
            )
            if isinstance(exc, aiohttp.ClientConnectorError):
                # Its text ends with the SSL context's repr (<ssl.SSLContext object at 0x…>).
                text = f"cannot reach {exc.host}:{exc.port} ({exc.os_error or type(exc).__name__})"
            return TurnModelError(
                one_line(f"{self.name}: {text}", self._secrets),
                retryable=retryable,
                unreachable=unreachable,
            )
        elif isinstance(exc, json.JSONDecodeError | RecursionError | UnicodeDecodeError):
            # Not JSON, nested deeper than the decoder goes, not UTF-8: the reply, not ours.
            text, retryable = f"unreadable response: {type(exc).__name__}: {exc}", True
        else:
            # The SDK refusing the request (ValueError: a field Gemini does not accept) or
            # anything unforeseen: the same request would fail the same way.
            text, retryable = f"{type(exc).__name__}: {exc}", False
        return TurnModelError(one_line(f"{self.name}: {text}", self._secrets), retryable=retryable)
