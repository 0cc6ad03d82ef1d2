"""Keep secrets out of anything that leaves the process or lands in a log."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Google API keys, bearer tokens and key=value pairs in URLs or messages.
_PATTERNS = (
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]+"),
    re.compile(r"(?i)((?:api[_-]?key|key|token|secret|password)\s*[=:]\s*)[^\s&'\",;]+"),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text


def short_error(exc: BaseException, secrets: Iterable[str] = (), limit: int = 200) -> str:
    """``"<Type>: <reason>"`` on one line, without secrets, at most ``limit`` characters."""
    reason = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    text = redact(text, secrets)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
