"""Ephemeral tokens as the fake Live server checks them (Gemini API, ``v1alpha``).

A client holding a token (``genai.Client(api_key="auth_tokens/…", http_options=HttpOptions(
api_version="v1alpha"))``) comes to ``…v1alpha.GenerativeService.BidiGenerateContentConstrained``
with ``Authorization: Token auth_tokens/…`` and no API key. The fake answers such a setup only
for a token it issued (``FakeLiveServer.issue_token``) that has not expired and has a use left;
a new session spends a use, a resumed one (a setup with a handle) does not, as documented.
Otherwise it closes the connection with 1008 (policy) and says why, as a refused key is; the
real service's exact answer to an expired token is not documented.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_METHOD = "BidiGenerateContentConstrained"
TOKEN_VERSION = "v1alpha"
TOKEN_REFUSED_CODE = 1008

_names = itertools.count(1)


@dataclass
class EphemeralToken:
    name: str
    expires_at: float  # time.monotonic()
    uses: int = 1
    used: int = 0

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.expires_at


def new_token(*, ttl_s: float = 1800.0, uses: int = 1, name: str | None = None) -> EphemeralToken:
    return EphemeralToken(
        name=name or f"auth_tokens/fake-{next(_names)}-{time.monotonic_ns():x}",
        expires_at=time.monotonic() + ttl_s,
        uses=uses,
    )


def token_of(headers: Mapping[str, str]) -> str | None:
    """The token an ``Authorization: Token …`` header carries."""
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme == "Token" and token.strip() else None


def refusal(
    tokens: Mapping[str, EphemeralToken], method: str, version: str, token: str | None,
    resumed: bool,
) -> str | None:  # fmt: skip
    """Why a connection to the token endpoint is refused, or None (then a new session spends
    a use: the caller does that)."""
    if method != TOKEN_METHOD:
        return None
    if version != TOKEN_VERSION:
        return f"ephemeral tokens need {TOKEN_VERSION}, not {version}"
    if token is None:
        return "no ephemeral token (Authorization: Token …)"
    grant = tokens.get(token)
    if grant is None:
        return "unknown ephemeral token"
    if grant.expired:
        return "ephemeral token expired"
    if not resumed and grant.used >= grant.uses:
        return "ephemeral token has no use left"
    return None


__all__ = [
    "TOKEN_METHOD",
    "TOKEN_REFUSED_CODE",
    "TOKEN_VERSION",
    "EphemeralToken",
    "new_token",
    "refusal",
    "token_of",
]
