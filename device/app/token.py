"""``lookout token``: mint an ephemeral token where the API key lives, for a device that
must not hold the key (``lookout run --token-file`` / ``--token-url``).

``client.auth_tokens.create`` (Gemini API, ``v1alpha``) with the uses, the expiry of the
token and of new sessions, and Live constraints: the model always, and with ``--lock-config``
also Lookout's fixed session settings (response modalities, media resolution, context-window
compression, how realtime input is read). Only the fields given are locked
(``lock_additional_fields=[]``): the device still sends its own system instruction and tools,
which come from its configuration. Only the token is printed (on stdout, for a script to
pass on): its name, or with ``--json`` its name, expiry and uses, which ``lookout doctor``
on the device reads to say how long the token lasts; ``--out FILE`` writes that JSON whole
(a temporary file renamed over ``FILE``, readable by its owner only), so a device re-reading
the file never meets half a token. The key is never printed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from device.files.whole_file import why_not, write_whole
from models.gemini.tokens import TokenDetails

if TYPE_CHECKING:
    from google.genai import types

MAX_EXPIRE_S = 20 * 3600  # the service refuses a token that outlives 20 hours
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600}


class TokenRequestError(ValueError):
    """What the user asked for cannot be minted (said in one line, exit 2)."""


def parse_duration(text: str, flag: str) -> float:
    """``90s``, ``30m``, ``2h`` or plain seconds."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise TokenRequestError(f"{flag} {text!r}: give a duration such as 90s, 30m or 2h")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


@dataclass(frozen=True)
class TokenRequest:
    model: str
    uses: int = 1
    expire_s: float = 1800.0
    new_session_expire_s: float = 60.0
    lock_config: bool = False

    def __post_init__(self) -> None:
        if self.uses < 1:
            raise TokenRequestError(f"--uses {self.uses}: at least 1")
        if self.expire_s > MAX_EXPIRE_S:
            raise TokenRequestError("--expire: at most 20h (the service's limit)")
        if self.new_session_expire_s > self.expire_s:
            raise TokenRequestError("--new-session-expire: not after --expire")


def auth_token_config(request: TokenRequest, now: dt.datetime) -> types.CreateAuthTokenConfig:
    """The SDK's ``CreateAuthTokenConfig`` for ``request``, the times counted from ``now``."""
    from google.genai import types

    from live.model import LiveSetup
    from models.gemini.options import GeminiOptions

    locked: types.LiveConnectConfig | None = None
    if request.lock_config:
        full = GeminiOptions(model=request.model).connect_config(LiveSetup())
        locked = types.LiveConnectConfig(
            response_modalities=full.response_modalities,
            media_resolution=full.media_resolution,
            context_window_compression=full.context_window_compression,
            realtime_input_config=full.realtime_input_config,
        )
    return types.CreateAuthTokenConfig(
        uses=request.uses,
        expire_time=now + dt.timedelta(seconds=request.expire_s),
        new_session_expire_time=now + dt.timedelta(seconds=request.new_session_expire_s),
        live_connect_constraints=types.LiveConnectConstraints(model=request.model, config=locked),
        lock_additional_fields=[],
    )


def mint(request: TokenRequest) -> TokenDetails:
    """A new token, minted with the key in the environment (``MissingApiKey``,
    ``TokenRequestError`` or a one-line ``RuntimeError`` when it cannot be)."""
    from google.genai import errors

    from models.gemini.client import new_client, one_line
    from models.gemini.vertex import vertex_requested

    if vertex_requested():
        raise TokenRequestError(
            "ephemeral tokens are a Gemini API feature, not Vertex AI's: unset "
            "GOOGLE_GENAI_USE_VERTEXAI and set GEMINI_API_KEY"
        )
    client, secrets = new_client(None, None, "v1alpha")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    config = auth_token_config(request, now)
    try:
        token = client.auth_tokens.create(config=config)
    except errors.APIError as exc:
        detail = exc.message or exc.status or ""
        raise RuntimeError(
            one_line(f"minting refused (HTTP {exc.code}): {detail}", secrets)
        ) from None
    except Exception as exc:  # the network, TLS: said in one line, never the key
        raise RuntimeError(
            one_line(f"minting failed: {type(exc).__name__}: {exc}", secrets)
        ) from None
    name: str | None = token.name
    if not name:
        raise RuntimeError("the service answered without a token name")
    return TokenDetails(
        name=name,
        expires=now + dt.timedelta(seconds=request.expire_s),
        new_sessions_until=now + dt.timedelta(seconds=request.new_session_expire_s),
        uses=request.uses,
    )


def _rfc3339(when: dt.datetime | None) -> str | None:
    return None if when is None else when.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def token_json(token: TokenDetails) -> str:
    """What ``--json`` prints and ``--out`` writes: the fields ``--token-file`` reads."""
    fields = {
        "name": token.name,
        "expireTime": _rfc3339(token.expires),
        "newSessionExpireTime": _rfc3339(token.new_sessions_until),
        "uses": token.uses,
    }
    return json.dumps({k: v for k, v in fields.items() if v is not None})


def write_token_file(path: Path, token: TokenDetails) -> None:
    """``token_json`` into ``path``, whole, readable by its owner only (``OSError`` when
    the folder cannot take it; nothing half-written is left)."""
    write_whole(path, (token_json(token) + "\n").encode(), mode=0o600, sync=True)


def issue(request: TokenRequest, out: Path | None, *, as_json: bool = False) -> str:
    """Mint a token and deliver it: the text to print (nothing when written to ``out``).
    ``TokenRequestError`` for what the user asked wrong (exit 2), ``RuntimeError`` when
    minting or writing failed (exit 1)."""
    if out is not None and not out.parent.is_dir():
        raise TokenRequestError(f"--out {out}: no such folder {out.parent}")
    if out is not None and (why := why_not(out)):
        raise TokenRequestError(f"--out {out}: {why}")  # before a token is minted for nothing
    token = mint(request)
    if out is None:
        return token_json(token) if as_json else token.name
    try:
        write_token_file(out, token)
    except OSError as exc:
        # Minted but not kept: the token expires unused, and nothing names it.
        raise RuntimeError(f"--out {out}: {exc.strerror or exc}") from None
    return ""


__all__ = [
    "MAX_EXPIRE_S",
    "TokenRequest",
    "TokenRequestError",
    "issue",
    "mint",
    "parse_duration",
    "token_json",
    "write_token_file",
]
