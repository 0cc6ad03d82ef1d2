"""Keep secrets out of anything that leaves the process or lands in a log.

One place for every kind of secret Lookout handles: API keys and tokens in
messages, and credentials in URLs (camera streams, MQTT brokers), which are
shown, logged, recorded and served only without them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

# Google API keys, bearer tokens and key=value pairs in URLs or messages.
_PATTERNS = (
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]+"),
    re.compile(r"(?i)((?:api[_-]?key|key|token|secret|password)\s*[=:]\s*)[^\s&'\",;]+"),
)
# user[:password]@ right after a scheme, wherever a URL appears in a text.
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


def strip_credentials(text: str) -> str:
    """``rtsp://user:pass@cam/stream`` -> ``rtsp://***@cam/stream``, anywhere in ``text``."""
    return _URL_CREDENTIALS.sub("***@", text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return strip_credentials(text)


def safe_url(url: str) -> str:
    """``url`` without user:password@ and without secret-looking query values."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return redact(url.rsplit("@", 1)[-1])
    if ":" in host:  # an IPv6 literal lost its brackets in hostname
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")))


def short_error(exc: BaseException, secrets: Iterable[str] = (), limit: int = 200) -> str:
    """``"<Type>: <reason>"`` on one line, without secrets, at most ``limit`` characters."""
    reason = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    text = redact(text, secrets)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


__all__ = ["redact", "safe_url", "short_error", "strip_credentials"]
