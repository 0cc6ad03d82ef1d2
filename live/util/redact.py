"""Keep secrets out of anything that leaves the process or lands in a log.

One place for every kind of secret Lookout handles: API keys and tokens in
messages, and URLs (camera streams, MQTT brokers), which carry passwords in
their user info, in their query (``?user=admin&pwd=...``, ``sig=``, ``auth=``)
and now and then in their path (``/user=admin_password=...``).

``safe_url`` decides once what a source or a URL looks like wherever it is
shown: scheme, host, port and path; never the user info; the query's names,
with their values dropped (``***``) unless the name is one of a few known to
carry nothing secret (``channel=1``, ``subtype=0``). Cameras use any name for a
password (pwd, passwd, usr, code, key...), so names are not guessed at.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from live.util.printable import printable, printable_lines

HIDDEN = "***"  # whatever is left out: a value, user info, a host that cannot be told

_LABEL = r"(?:api[_-]?key|key|token|secret|password|passwd|pwd|signature|sig)"
# Google API keys, bearer tokens, an Authorization header's credentials and key=value
# pairs in messages. A label that ends a URL's path (``https://host/lookout/token: why``)
# is no label: the reason after it is not a secret. After a slash, only ``=`` or a colon
# with no space after it (``/token=X``, ``/token:X``) still marks a value.
_PATTERNS = (
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]+"),
    re.compile(r"(?i)((?<![a-z])authorization\s*[=:]\s*(?:[a-z]+\s+)?)[^\s&'\",;]+"),
    re.compile(
        rf"(?i)((?<![a-z/]){_LABEL}\s*[=:]\s*|(?<=/){_LABEL}(?:\s*=\s*|:(?!\s)))"
        r"[^\s&'\",;]+"
    ),
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
# A URL inside a message: up to a space, a quote or an angle bracket.
_URL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
_TRAILING = ".,;:!)]}"
# A host as it can be shown: a name or an IPv4 address, or an IPv6 literal, and a port.
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[\w.\-%~\\]+)(?::\d{0,5})?")  # \: JSON's \u00e9
_NAME = re.compile(r"[A-Za-z0-9_.\-\[\]]{1,40}")
# Query names whose short values say which stream, never who may see it.
_HARMLESS = frozenset(
    {
        "action",
        "cam",
        "camera",
        "ch",
        "channel",
        "chn",
        "codec",
        "fps",
        "height",
        "profile",
        "quality",
        "resolution",
        "rtsp_transport",
        "stream",
        "streamtype",
        "subtype",
        "timeout",
        "transport",
        "width",
    }
)
_USER_NAMES = frozenset({"account", "login", "name", "user", "username", "usr"})
_HARMLESS_VALUE = re.compile(r"[A-Za-z0-9_.\-]{1,16}")
# A mistyped URL (``rtsp:/admin:pw@cam``, ``rtsp//admin:pw@cam``): its user info.
_SCHEME_TYPO = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:/*")
# user:password@ outside a URL: in a mistyped one, or quoted in a message.
# It starts after a delimiter and is bounded: tried at every character of a long run (a
# JSON array of numbers on every /api/state), an open-ended pattern takes quadratic time.
_USERINFO = re.compile(
    r"(?:^|(?<=[\s'\"<>/(\[{,;=]))[^\s'\"<>/:@(\[{,;=]{1,64}:(?!/)[^\s'\"<>]{0,128}@"
)


def _query(query: str) -> str:
    shown = []
    for part in re.split(r"[&;]", query):
        if not part:
            continue
        name, equals, value = part.partition("=")
        if not equals:
            # A bare part is as likely a value (a token) as a flag.
            shown.append(HIDDEN)
            continue
        name_shown = name if _NAME.fullmatch(name) else HIDDEN
        if not value:
            shown.append(f"{name_shown}=")
        elif name.lower() in _HARMLESS and _HARMLESS_VALUE.fullmatch(value):
            shown.append(f"{name_shown}={value}")
        else:
            shown.append(f"{name_shown}={HIDDEN}")
    return "&".join(shown)


def _path(path: str) -> str:
    # /user=admin_password=x_channel=1.sdp, /stream;jsessionid=x: a value in the path.
    return "/".join(
        segment if "=" not in segment else segment.split("=", 1)[0] + "=" + HIDDEN
        for segment in path.split("/")
    )


def _authority_end(rest: str) -> int:
    found = [i for i in (rest.find(mark) for mark in "/?#") if i != -1]
    return min(found, default=len(rest))


def at_after_host(url: str) -> bool:
    """Whether ``url`` has an ``@`` past its host: a password with ``/``, ``?`` or ``#``
    typed as it is (a client then takes part of it for the host, and looks that name
    up in the DNS), or an ``@`` in a path that should read ``%40``."""
    match = _SCHEME.match(url.strip())
    if match is None:
        return False
    rest = url.strip()[match.end() :]
    return "@" in rest[_authority_end(rest) :]


def _split_authority(rest: str) -> tuple[str, str, bool] | None:
    """``(host[:port], what follows it, elided)`` of ``rest`` (a URL after ``://``).

    The user info ends at the last ``@`` before the path (a password may hold ``@``).
    An ``@`` further on is either a password with ``/``, ``?`` or ``#`` in it (which no
    client reads as one, but which the user typed) or a rare ``@`` in a path or query:
    either way the host starts after the last ``@`` and what comes before is elided.
    None: no host can be told (nothing of the address is shown then)."""
    end = _authority_end(rest)
    authority, tail = rest[:end], rest[end:]
    elided = False
    if "@" in tail:
        after = rest.rsplit("@", 1)[1]
        match = _HOST.match(after)
        if match is None or (match.end() < len(after) and after[match.end()] not in "/?#"):
            return None
        return match.group(0), after[match.end() :], True
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        elided = userinfo == HIDDEN  # shown once already: still say something was left out
    # Nothing of a password is left in it (that ends at the last @): shown as typed,
    # even if no client could read it as a host (``mqtt://host[:port]`` in a message).
    return authority, tail, elided


def _not_a_url(text: str) -> str:
    typo = _SCHEME_TYPO.match(text)
    if typo is not None and "@" in text[typo.end() :]:
        # rtsp:/admin:pw@cam, or user:pass word@host (a broker without its scheme).
        return typo.group(0) + HIDDEN + "@" + text.rsplit("@", 1)[1]
    return _USERINFO.sub(HIDDEN + "@", text)


def safe_url(url: str) -> str:
    """How a source or a URL is shown, logged, recorded and served, wherever that is.

    ``rtsp://admin:S3cr@t@cam:554/live?channel=1&pwd=x#f`` is shown as
    ``rtsp://cam:554/live?channel=1&pwd=***``. Something that is not a URL (a file, a
    camera index) is shown as it is, but for ``user:password@`` in it (a mistyped URL).
    Control characters are escaped: the result is one line."""
    text = url.strip()
    match = _SCHEME.match(text)
    if match is None:
        return printable(_not_a_url(text))
    scheme = match.group(1)
    split = _split_authority(text[match.end() :])
    if split is None:
        return printable(f"{scheme}://{HIDDEN}")
    host, tail, elided = split
    tail = tail.split("#", 1)[0]
    path, question, query = tail.partition("?")
    shown = f"{scheme}://{HIDDEN + '@' if elided and host != HIDDEN else ''}{host}{_path(path)}"
    if question:
        shown += "?" + _query(query)
    return printable(shown)


def strip_credentials(text: str) -> str:
    """Every URL in ``text`` (a message, an error) as ``safe_url`` shows it, and any
    other ``user:password@`` in it hidden (``not 'u:pw@host'``, a URL without scheme)."""

    def one(match: re.Match[str]) -> str:
        found = match.group(0)
        kept = found.rstrip(_TRAILING)
        return safe_url(kept) + found[len(kept) :]

    return _USERINFO.sub(HIDDEN + "@", _URL_IN_TEXT.sub(one, text))


def _distinctive(text: str) -> bool:
    # Replaced wherever it turns up in what is served, a secret must not be a word or a
    # number the device's own data holds ("stream", "running", 1234 in a timestamp).
    mixed = any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
    return len(text) >= 6 and (mixed or not text.isalnum())


def url_secrets(url: str | None) -> tuple[str, ...]:
    """What of ``url`` is secret wherever it turns up, for ``redact``: the password of its
    user info and its query's values (raw and decoded), but for the harmless ones, user
    names, and what is not distinctive enough to be replaced in any text (``safe_url``
    hides them all the same where the URL is shown)."""
    if not url or not _SCHEME.match(url.strip()):
        return ()
    rest = url.strip().split("://", 1)[1]
    found: list[str] = []
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    query = rest.split("?", 1)[1].split("#", 1)[0] if "?" in rest else ""
    for part in re.split(r"[&;]", query):
        name, _, value = part.partition("=")
        if name.lower() not in _HARMLESS | _USER_NAMES:
            found.append(value or name)
    secrets = {s for raw in found for s in (raw, unquote(raw)) if _distinctive(s)}
    return tuple(sorted(secrets, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, HIDDEN)
    for pattern in _PATTERNS:
        text = pattern.sub(_hidden, text)
    return strip_credentials(text)


_PROSE_AFTER = re.compile(r":\s+$")


def _hidden(match: re.Match[str]) -> str:
    """A secret's value hidden; a file path that ends in a label's word
    (``/run/lookout/gemini-token: a named pipe``) is a path and its reason, kept."""
    label = match.group(1) if match.groups() else ""
    if label and _PROSE_AFTER.search(label):
        before = match.string[max(0, match.start() - 256) : match.start()]
        word = before.rsplit(None, 1)[-1] if before.strip() else ""
        if "/" in word and not before[-1:].isspace():
            return match.group(0)
    return label + HIDDEN


def short_error(exc: BaseException, secrets: Iterable[str] = (), limit: int = 200) -> str:
    """``"<Type>: <reason>"`` on one line, without secrets, at most ``limit`` characters."""
    reason = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    text = redact(text, secrets)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


class SafeFormatter(logging.Formatter):
    """Log records as they may be shown: every URL as ``safe_url`` shows it, and one
    line per message (a library's or a model's text cannot start a line of its own)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(strip_credentials(record.message))
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return printable_lines(strip_credentials(super().formatException(ei)))


__all__ = [
    "SafeFormatter",
    "at_after_host",
    "redact",
    "safe_url",
    "short_error",
    "strip_credentials",
    "url_secrets",
]
