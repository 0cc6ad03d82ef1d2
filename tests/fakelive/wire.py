"""Reading the SDK's wire JSON tolerantly: either key spelling, either base64 alphabet.

The SDK mixes snake and camel case (and both base64 alphabets are legal protobuf JSON), so
the fakes and the tests read fields through these and need not care which arrived.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["b64decode_any", "get_field", "get_path", "snake_case"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def snake_case(name: str) -> str:
    """``mimeType`` -> ``mime_type``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` accepting either spelling: ``get_field(d, "mime_type")`` finds ``mimeType``.

    The SDK is not consistent (``realtime_input`` next to ``functionResponses``, ``mime_type``
    inside ``realtime_input`` but ``mimeType`` inside ``setup``), so tests should not care.
    """
    if not isinstance(obj, Mapping):
        return default
    for key in (name, _camel(name), snake_case(name)):
        if key in obj:
            return obj[key]
    return default


def get_path(obj: Any, *names: str, default: Any = None) -> Any:
    """Nested :func:`get_field`: ``get_path(setup, "generation_config", "response_modalities")``."""
    for name in names:
        obj = get_field(obj, name, _MISSING)
        if obj is _MISSING:
            return default
    return obj


_MISSING: Any = object()


def b64decode_any(data: str | bytes) -> bytes:
    """Decode base64 in either alphabet (the SDK sends URL-safe, protobuf JSON allows both).

    Padding is optional on the wire, so it is restored before decoding.
    """
    text = data.decode("ascii") if isinstance(data, bytes) else data
    text = "".join(text.split()).replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {text[:40]!r}") from exc
