"""URLs, host names and ports, checked at start with the rules of what uses them.

What ``urllib.parse`` accepts, a client may still refuse later, at run time: paho (under
aiomqtt) asks ``socket.getaddrinfo``, which encodes a name with the ``idna`` codec and
raises on an empty label or one over 63 characters; paho refuses port 0 and packs a user
name or password into 16 bits of length; ``http.client`` refuses a URL with a space or a
control character. ``urlsplit`` itself drops tabs and line breaks without a word and
takes any port up to 65535, 0 included. So each URL is checked here, once, with the
libraries' own rules where they can be called (the ``idna`` codec, ``ipaddress``,
encoding to UTF-8) and with the protocol's where they cannot; every problem is a
ValueError whose text the configuration names the setting in (``--mqtt``,
``LOOKOUT_MQTT``, ``lookout.toml: outputs.mqtt``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

from device.config.text import describe, mqtt_forbidden, not_utf8, unsafe

# RFC 1035: a name is at most 255 octets on the wire, 253 characters written out.
MAX_NAME = 253
# MQTT 3.1.1 section 1.5.3: a string's length is two bytes (paho packs it with "!H").
MQTT_MAX_STRING = 65_535
# What a label may hold once the idna codec has encoded it (it passes ASCII through as it
# is): RFC 1123's letters, digits and hyphen, and the underscore Docker's and some LANs'
# names have (their resolvers answer for them). A space, a slash or a % never resolves.
_LABEL = re.compile(r"[A-Za-z0-9_-]+")
_DIGITS = re.compile(r"[0-9]{1,5}")  # str.isdigit() takes "²", which int() does not
# No user info in it: the console's redaction would take "user:password@" for a secret.
_MQTT_FORM = "mqtt://host[:port] or mqtts://host[:port]"
# Stream schemes whose URL names a server to connect to (udp://, rtp://, tcp:// and
# srt:// may name none: FFmpeg listens then).
CLIENT_STREAMS = frozenset({"rtsp", "rtsps", "rtmp", "rtmps", "http", "https", "mms"})


def _shown(url: str) -> str:
    from live.util.redact import safe_url  # lazily: the configuration loads only itself

    return f"'{safe_url(url)}'"  # escaped already: repr() would escape the escapes


def host_problem(host: str) -> str | None:
    """Why ``host`` (a name, or an IP address without brackets) can never be connected
    to as written; None when it can."""
    if not host:
        return "is empty"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if ":" in host:
        return "is not an IPv6 address"
    problem = unsafe(host)
    if problem is not None:
        return problem
    name = host.removesuffix(".")  # a fully qualified name's final dot
    try:
        encoded = name.encode("idna").decode("ascii")  # what getaddrinfo does with it
    except UnicodeError as exc:
        labels = re.split("[.\u3002\uff0e\uff61]", name)  # the dots the codec splits at
        if "" in labels:
            return "has an empty label (two dots in a row, or one at the start)"
        longest = max(labels, key=len)
        if len(longest) > 63:
            return f"has a label of {len(longest)} characters (at most 63)"
        return f"is not a host name ({' '.join(str(exc).split())})"
    if len(encoded) > MAX_NAME:
        return f"is {len(encoded)} characters long (a host name has at most {MAX_NAME})"
    for label in encoded.split("."):
        if not _LABEL.fullmatch(label):
            char = next(c for c in label if not _LABEL.fullmatch(c))
            return f"has {describe(char)}, which no host name holds (letters, digits, - and _)"
    if all(label.isdigit() for label in encoded.split(".")):
        # getaddrinfo reads "1.2.3" as 1.2.0.3; a name is never all digits (RFC 1123).
        return "is not an IPv4 address (four numbers from 0 to 255)"
    return None


def _bracketed(host: str) -> str | None:
    """Why ``host``, written in brackets, is not an IPv6 address (None: it is)."""
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return "is in brackets but not an IPv6 address"
    return None


def _port_text(parts: SplitResult) -> str:
    hostinfo = parts.netloc.rpartition("@")[2]
    if hostinfo.startswith("["):
        return hostinfo.partition("]")[2].removeprefix(":")
    return hostinfo.rpartition(":")[2] if ":" in hostinfo else ""


def port_of(parts: SplitResult) -> int | None:
    """The URL's port (None: none given); a ValueError when no client can connect to it
    (urlsplit takes 0, which paho and every TCP client refuse)."""
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError(f"port {_port_text(parts)!r} is not a number from 1 to 65535")
    return port


def _split(text: str) -> SplitResult:
    problem = unsafe(text)
    if problem is not None:
        # urlsplit would drop a tab or a line break silently: the URL used would not be
        # the one shown. Percent-encoded (%0A), it is the server's to read.
        raise ValueError(problem)
    try:
        return urlsplit(text)
    except ValueError:  # Python checks a host in brackets: an IPv6 address
        raise ValueError("has a host in brackets that is not an IPv6 address") from None


def _host(parts: SplitResult) -> str:
    host = parts.hostname or ""
    problem = host_problem(host)
    if problem is not None:
        raise ValueError(f"the host name {host!r} {problem}" if host else "names no host")
    return host


def check_url(url: str, schemes: Collection[str], *, user_info: bool = True) -> SplitResult:
    """``url`` split, when it names a server a client can connect to with one of
    ``schemes``; else a ValueError quoting it (its secrets hidden)."""
    text = url.strip()
    try:
        parts = _split(text)
        if parts.scheme.lower() not in schemes:
            names = " or ".join(f"{scheme}://" for scheme in sorted(schemes))
            raise ValueError(f"must start with {names}")
        port_of(parts)
        _host(parts)
        if not user_info and "@" in parts.netloc:
            raise ValueError("has a user name in it, which it would not send (the host would)")
    except ValueError as exc:
        raise ValueError(f"{_shown(text)}: {exc}") from None
    return parts


def check_http_url(url: str) -> str:
    """An http(s) URL as urllib.request fetches it: user info would be taken for part of
    the host, and http.client refuses a space, a control or a non-ASCII character in the
    rest (percent-encode them)."""
    parts = check_url(url, ("http", "https"), user_info=False)
    rest = url.strip().partition("://")[2][len(parts.netloc) :]
    odd = next((c for c in rest if not "\x20" < c < "\x7f"), None)
    if odd is not None:
        raise ValueError(f"{_shown(url)}: has {describe(odd)}: percent-encode it")
    return url


def check_source(source: str) -> str:
    """A stream URL (``rtsp://``, ``http://``...) whose host and port can be connected to;
    anything else (a camera index, a file, a folder) as it is."""
    from live.util.redact import at_after_host

    scheme = source.strip().partition("://")[0].lower()
    if scheme in CLIENT_STREAMS and "://" in source and not at_after_host(source):
        check_url(source, CLIENT_STREAMS)  # an @ after the host: open_source says why
    return source


# ------------------------------------------------------------------------ MQTT


@dataclass(frozen=True)
class MqttSettings:
    host: str
    port: int = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        scheme = "mqtts" if self.tls else "mqtt"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def _mqtt_string(raw: str | None, what: str, *, binary: bool) -> str | None:
    """A user name (an MQTT UTF-8 string) or a password (binary data), percent-decoded,
    as paho will encode it: UTF-8, at most 65,535 bytes."""
    if not raw:
        return None
    try:
        value = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"the {what}, percent-decoded, is not UTF-8 text") from None
    problem = not_utf8(value)
    if problem is not None:
        raise ValueError(f"the {what} {problem}")
    size = len(value.encode("utf-8"))
    if size > MQTT_MAX_STRING:
        raise ValueError(f"the {what} is {size:,} bytes in UTF-8 (MQTT carries at most 65,535)")
    bad = None if binary else next((c for c in value if mqtt_forbidden(c)), None)
    if bad is not None:
        raise ValueError(f"the {what} has {describe(bad)}, which MQTT brokers refuse")
    return value


def mqtt_settings(url: str) -> MqttSettings:
    """``mqtt://[user[:password]@]host[:port]`` (1883) or ``mqtts://...`` (TLS, 8883), as
    the client will take it; else a ValueError quoting it (its password hidden)."""
    text = url.strip()
    try:
        parts = _split(text)
    except ValueError as exc:
        raise ValueError(f"{_shown(text)}: {exc}") from None
    if parts.scheme not in ("mqtt", "mqtts") or not parts.netloc:
        raise ValueError(f"must be {_MQTT_FORM}, not {_shown(text)}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"takes no path or query: {_shown(text)}")
    try:
        port = port_of(parts)
        tls = parts.scheme == "mqtts"
        return MqttSettings(
            host=_host(parts),
            port=port if port is not None else (8883 if tls else 1883),
            tls=tls,
            username=_mqtt_string(parts.username, "user name", binary=False),
            password=_mqtt_string(parts.password, "password", binary=True),
        )
    except ValueError as exc:
        raise ValueError(f"{_shown(text)}: {exc}") from None


def check_mqtt_url(url: str) -> str:
    mqtt_settings(url)
    return url


# ------------------------------------------------------------- the status server


def split_http(spec: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` (all interfaces) or ``PORT`` (loopback) as
    a host and a port (0: any free port); a ValueError says what is wrong."""
    text = spec.strip()
    host: str
    if _DIGITS.fullmatch(text):
        host, port_text = "127.0.0.1", text
    elif text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ValueError(f"expected HOST:PORT, not {spec!r}")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ValueError(f"expected HOST:PORT (IPv6 as [ADDR]:PORT), not {spec!r}")
        host = host or "0.0.0.0"
    if not _DIGITS.fullmatch(port_text) or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port must be 0..65535, not {port_text!r}")
    problem = _bracketed(host) if text.startswith("[") else host_problem(host)
    if problem is not None:
        raise ValueError(f"{spec!r}: the host {host!r} {problem}")
    return host, int(port_text)


def check_http(spec: str) -> str:
    if spec.strip():  # "": no status server
        split_http(spec)
    return spec


def check_host_names(names: str) -> str:
    """``--http-hosts``: host names (or addresses), a port allowed, comma-separated, as a
    request's Host header names them; a URL or a mistyped name would never match one."""
    for item in (part.strip() for part in names.split(",")):
        if not item:
            continue
        if "://" in item or "/" in item:
            raise ValueError(f"takes host names, not URLs: {item!r}")
        host, port = item, ""
        bracketed = item.startswith("[") and "]" in item
        if bracketed:
            host, _, port = item[1:].partition("]")
            port = port.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        if port and not (_DIGITS.fullmatch(port) and 0 < int(port) <= 65535):
            raise ValueError(f"{item!r}: port {port!r} is not a number from 1 to 65535")
        problem = _bracketed(host) if bracketed else host_problem(host)
        if problem is not None:
            raise ValueError(f"{item!r} {problem}")
    return names


__all__ = [
    "CLIENT_STREAMS",
    "MAX_NAME",
    "MQTT_MAX_STRING",
    "MqttSettings",
    "check_host_names",
    "check_http",
    "check_http_url",
    "check_mqtt_url",
    "check_source",
    "check_url",
    "host_problem",
    "mqtt_settings",
    "port_of",
    "split_http",
]
