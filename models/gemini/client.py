"""The ``genai.Client`` both Gemini models use, and keeping its API key out of sight.

``GeminiLiveModel`` (``models/gemini/model.py``) and ``GeminiTurnModel``
(``models/gemini/turns.py``) build their client here, find the key the same
way, and cut and redact error details here.

Defaults, and why:

* API key: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY`` (the SDK's own precedence; it warns
  when both are set). Empty values count as unset.
* API version (``api_version is None``): ``GOOGLE_GENAI_API_VERSION`` when set (``beta``
  meaning ``v1beta``, as the SDK reads it), else ``v1beta``, the version the Live API is
  documented on. The SDK's own default would be ``v1``.
* Vertex AI (``vertex``, from ``models/gemini/vertex.py``): ``genai.Client(vertexai=True,
  project=..., location=..., credentials=<application default credentials>)``, API version
  ``v1beta1`` unless configured, base URL ``GOOGLE_VERTEX_BASE_URL`` when set; no API key.
* A ``genai.Client`` passed in is used as it is (its base URL, TLS and version); each model
  lets only an explicit API version override it, per connection or request. Without one, the
  client is built the way the SDK documents, so ``GOOGLE_GEMINI_BASE_URL`` and
  ``SSL_CERT_FILE`` apply (read once, when the model is created).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from google import genai
from google.genai import types

from live.util.redact import redact
from models.gemini.api_version import api_version_from_env
from models.gemini.keys import API_KEY_VARIABLES, MissingApiKey, api_key_from_env
from models.gemini.vertex import (
    VertexTarget,
    credential_secrets,
    default_credentials,
    vertex_api_version,
)

DEFAULT_API_VERSION = "v1beta"

_DETAIL_LIMIT = 200


def resolve_api_version(
    api_version: str | None = None, environ: Mapping[str, str] = os.environ
) -> str:
    """``api_version``, else ``GOOGLE_GENAI_API_VERSION`` (``beta`` = ``v1beta``), else v1beta."""
    return api_version_from_env(api_version, DEFAULT_API_VERSION, environ)


def one_line(text: str, secrets: Sequence[str]) -> str:
    """``text`` on one line, secrets removed before it is cut short."""
    text = redact(" ".join(text.split()), secrets)
    if len(text) > _DETAIL_LIMIT:
        # Details end up in events and logs; a bad frame can be megabytes long.
        text = text[: _DETAIL_LIMIT - 1] + "…"
    return text


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


def client_secrets(client: genai.Client, api_key: str | None = None) -> tuple[str, ...]:
    """The API key (or Vertex access token) a client handed in uses, to keep it out of
    messages and logs."""
    inner = getattr(client, "_api_client", None)
    key = api_key or getattr(inner, "api_key", None)
    keys = (key,) if isinstance(key, str) and key else ()
    return keys + credential_secrets(getattr(inner, "_credentials", None))


def _with_version_and_logger(
    http_options: types.HttpOptions | None,
    api_version: str | None,
    default_version: str,
    secrets: Sequence[str],
    websocket_logger: bool,
) -> types.HttpOptions:
    options = http_options.model_copy() if http_options is not None else types.HttpOptions()
    if not options.api_version or api_version:
        options.api_version = api_version or default_version
    if websocket_logger:
        args = dict(options.async_client_args or {})
        args.setdefault("logger", _RedactingLogger(logging.getLogger("websockets.client"), secrets))
        options.async_client_args = args
    return options


def new_client(
    api_key: str | None,
    http_options: types.HttpOptions | None,
    api_version: str | None,
    *,
    websocket_logger: bool = False,
    vertex: VertexTarget | None = None,
) -> tuple[genai.Client, tuple[str, ...]]:
    """A Gemini Developer API client (or a Vertex AI one, with ``vertex``) and the secrets
    it uses (see the module doc for defaults).

    ``websocket_logger``: route the websocket library's log through a filter that
    removes the key (Live only; REST clients take no such argument).
    """
    if vertex is not None:
        return _vertex_client(vertex, http_options, api_version, websocket_logger)
    key = (api_key or "").strip() or api_key_from_env()
    if not key:
        raise MissingApiKey()
    options = _with_version_and_logger(
        http_options, api_version, resolve_api_version(), [key], websocket_logger
    )
    # Base URL and CA file come from the SDK's own environment variables
    # (GOOGLE_GEMINI_BASE_URL, SSL_CERT_FILE), read here, once.
    return genai.Client(vertexai=False, api_key=key, http_options=options), (key,)


def token_client(
    token: str, http_options: types.HttpOptions | None = None
) -> tuple[genai.Client, tuple[str, ...]]:
    """A client for one ephemeral token (``models/gemini/tokens.py``): the token as its key,
    ``v1alpha`` (the only version tokens work on), so the SDK connects to
    ``…BidiGenerateContentConstrained`` with ``Authorization: Token …``."""
    options = _with_version_and_logger(http_options, "v1alpha", "v1alpha", [token], True)
    return genai.Client(vertexai=False, api_key=token, http_options=options), (token,)


def _vertex_client(
    vertex: VertexTarget,
    http_options: types.HttpOptions | None,
    api_version: str | None,
    websocket_logger: bool,
) -> tuple[genai.Client, tuple[str, ...]]:
    """A Vertex AI client: explicit ``vertexai=True`` (else GOOGLE_VERTEX_BASE_URL is
    ignored), explicit project and location (else a custom base URL is a gateway without
    auth), application default credentials loaded now (``VertexError`` when none)."""
    credentials = default_credentials()
    secrets = credential_secrets(credentials)
    options = _with_version_and_logger(
        http_options, api_version, vertex_api_version(), secrets, websocket_logger
    )
    if vertex.base_url and not options.base_url:
        options.base_url = vertex.base_url
    client = genai.Client(
        vertexai=True,
        project=vertex.project,
        location=vertex.location,
        credentials=credentials,
        http_options=options,
    )
    return client, secrets


def given_or_new_client(
    client: genai.Client | None,
    api_key: str | None,
    http_options: types.HttpOptions | None,
    api_version: str | None,
    *,
    websocket_logger: bool = False,
    vertex: VertexTarget | None = None,
) -> tuple[genai.Client, tuple[str, ...]]:
    """``client`` as it is, else ``new_client(...)``; with the secrets to redact.

    A given client keeps its own settings: ``http_options`` and ``api_version`` only shape a
    new one (each model applies an explicit version to a given client per call).
    """
    if client is not None:
        return client, client_secrets(client, api_key)
    return new_client(
        api_key, http_options, api_version, websocket_logger=websocket_logger, vertex=vertex
    )


__all__ = [
    "API_KEY_VARIABLES",
    "DEFAULT_API_VERSION",
    "MissingApiKey",
    "api_key_from_env",
    "client_secrets",
    "given_or_new_client",
    "new_client",
    "one_line",
    "resolve_api_version",
    "token_client",
]
