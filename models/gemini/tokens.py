"""Ephemeral tokens: how a device connects to Gemini Live without holding the API key.

Where the key lives, ``lookout token`` mints a short-lived token (``client.auth_tokens.create``,
Gemini API ``v1alpha``). The device is given a way to fetch one (``--token-file``: a file some
provisioning process keeps fresh, re-read at each connection; ``--token-url``: GET, a fresh
token per new session and reconnect) and a ``genai.Client(api_key=<token name>,
http_options=HttpOptions(api_version="v1alpha"))`` per connection: the SDK then connects to
``…BidiGenerateContentConstrained`` with ``Authorization: Token auth_tokens/…``.

A token is never logged or shown: every message here names where it came from, never what
was read.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.error
import urllib.request
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import anyio
from google.genai import errors

from device.files.input_file import KB, TOKEN_MAX, read_input
from live.model import ConnectionLost
from live.util.redact import safe_url

TOKEN_PREFIX = "auth_tokens/"
TOKEN_API_VERSION = "v1alpha"
_URL_TIMEOUT_S = 10.0
_MAX_BODY = 64 * KB

# The SDK warns at every token connection that its token support is experimental; the
# device uses it on purpose, and a warning per reconnect would fill the console.
warnings.filterwarnings(
    "ignore", message=r"The SDK's ephemeral token support", category=errors.ExperimentalWarning
)


class TokenUnavailable(Exception):
    """No usable token could be fetched now (said in one line, never with the token)."""


class TokenRefused(Exception):
    """The service refused a connection's token (expired, used up, unknown)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


T = TypeVar("T")


@dataclass(frozen=True)
class TokenDetails:
    """A token and what its file or URL says of it (``lookout token --json`` writes these;
    a bare name says nothing of them). The times are the minter's, in UTC."""

    name: str
    expires: dt.datetime | None = None
    new_sessions_until: dt.datetime | None = None
    uses: int | None = None


class TokenSource(Protocol):
    """Where a device gets an ephemeral token, once per connection."""

    def describe(self) -> str: ...

    async def token(self) -> str: ...

    async def details(self) -> TokenDetails: ...


def _when(value: object) -> dt.datetime | None:
    """An RFC 3339 time (``2026-12-02T10:40:00Z``), or None where absent or unreadable:
    the times only inform what is said; the service decides."""
    if not isinstance(value, str):
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def details_from_text(text: str, where: str) -> TokenDetails:
    """The token in what a file or a URL gave: its first line, or a JSON ``AuthToken``'s
    ``name`` (with ``expireTime``, ``newSessionExpireTime`` and ``uses`` where given). It
    must be an ephemeral token: an API key put there by mistake would otherwise be sent as
    a key."""
    text = text.lstrip("\ufeff").strip()
    fields: dict[str, object] = {}
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except ValueError:
            loaded = None
        if not isinstance(loaded, dict):
            raise TokenUnavailable(f"{where}: not JSON with a token name")
        fields = loaded
        value = fields.get("name", "")
        token = value.strip() if isinstance(value, str) else ""
    else:
        token = text.splitlines()[0].strip() if text else ""
    if not token:
        raise TokenUnavailable(f"{where}: no token in it")
    if not token.startswith(TOKEN_PREFIX) or any(c.isspace() for c in token):
        raise TokenUnavailable(
            f"{where}: not an ephemeral token (one starts with {TOKEN_PREFIX}; an API key "
            "does not belong on the device)"
        )
    uses = fields.get("uses")
    return TokenDetails(
        name=token,
        expires=_when(fields.get("expireTime")),
        new_sessions_until=_when(fields.get("newSessionExpireTime")),
        uses=uses if isinstance(uses, int) and not isinstance(uses, bool) else None,
    )


def token_from_text(text: str, where: str) -> str:
    """The token's name in what a file or a URL gave (``details_from_text``)."""
    return details_from_text(text, where).name


class TokenFile:
    """A file holding the current token (its first line), re-read at every connection."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def describe(self) -> str:
        return f"--token-file {self.path}"

    def _read(self) -> TokenDetails:
        # A file swapped for /dev/zero or a named pipe while the device runs is refused
        # (said as a failed connection), never read whole nor waited on.
        try:
            text = read_input(self.path, TOKEN_MAX).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8 text"
            raise TokenUnavailable(f"{self.describe()}: {reason}") from None
        return details_from_text(text, self.describe())

    async def details(self) -> TokenDetails:
        # Abandoned on cancellation: a file on a hung network mount must not hold up a stop.
        return await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)

    async def token(self) -> str:
        return (await self.details()).name


class TokenUrl:
    """A URL answering GET with a fresh token (plain text, or a JSON ``AuthToken``)."""

    def __init__(self, url: str, timeout_s: float = _URL_TIMEOUT_S) -> None:
        self.url = url
        self.timeout_s = timeout_s

    def describe(self) -> str:
        return f"--token-url {safe_url(self.url)}"

    def _get(self) -> TokenDetails:
        accept = {"Accept": "text/plain, application/json"}
        request = urllib.request.Request(self.url, headers=accept)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                body = answer.read(_MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            raise TokenUnavailable(f"{self.describe()}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise TokenUnavailable(f"{self.describe()}: {reason}") from None
        if len(body) > _MAX_BODY:
            raise TokenUnavailable(
                f"{self.describe()}: an answer over {_MAX_BODY // 1000} KB is not a token"
            )
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise TokenUnavailable(f"{self.describe()}: not UTF-8 text") from None
        return details_from_text(text, self.describe())

    async def details(self) -> TokenDetails:
        # urlopen's timeout is per socket operation: a server that drips a byte now and
        # then would hold a connection attempt for ever. The whole fetch has this long;
        # the thread is abandoned when it is up, or when the run stops (SIGTERM's 2 s).
        with anyio.move_on_after(self.timeout_s):
            return await anyio.to_thread.run_sync(self._get, abandon_on_cancel=True)
        raise TokenUnavailable(f"{self.describe()}: no answer in {self.timeout_s:g} s")

    async def token(self) -> str:
        return (await self.details()).name


def token_source(file: Path | None, url: str | None) -> TokenSource | None:
    """Where a device gets its tokens (``--token-file``, else ``--token-url``), if anywhere."""
    if file is not None:
        return TokenFile(file)
    if url is not None:
        return TokenUrl(url)
    return None


async def _fetch(source: TokenSource) -> str:
    try:
        return await source.token()
    except TokenUnavailable as exc:
        # "token from", not "token:": the redaction takes "token: X" for a secret X.
        raise ConnectionLost(f"no ephemeral token from {exc}") from None


async def with_fresh_token(source: TokenSource, open_with: Callable[[str], Awaitable[T]]) -> T:
    """``open_with(token)`` with a token fetched now (a new session or a resumed one).

    A token refused (``TokenRefused``: expired, used up) is fetched again at once; the same
    token again, or a fresh one refused too, is a retryable ``ConnectionLost``: the
    provisioning side may not have renewed it yet. So is a token that cannot be fetched.
    """
    token = await _fetch(source)
    try:
        return await open_with(token)
    except TokenRefused as exc:
        refused = exc.reason
    fresh = await _fetch(source)
    if fresh == token:
        raise ConnectionLost(f"{refused}; {source.describe()} has no new token yet")
    try:
        return await open_with(fresh)
    except TokenRefused as exc:
        raise ConnectionLost(f"{exc.reason} (a fresh one too)") from None


__all__ = [
    "TOKEN_API_VERSION",
    "TOKEN_PREFIX",
    "TokenDetails",
    "TokenFile",
    "TokenRefused",
    "TokenSource",
    "TokenUnavailable",
    "TokenUrl",
    "details_from_text",
    "token_from_text",
    "token_source",
    "with_fresh_token",
]
