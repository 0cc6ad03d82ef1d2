"""The API version a Gemini client asks for, read as the SDK reads ``GOOGLE_GENAI_API_VERSION``.

Shared by the Gemini API (``models/gemini/client.py``, default ``v1beta``) and Vertex AI
(``models/gemini/vertex.py``, default ``v1beta1``); it imports neither, so neither imports
the other for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

API_VERSION_VARIABLE = "GOOGLE_GENAI_API_VERSION"


def api_version_from_env(
    api_version: str | None, default: str, environ: Mapping[str, str] = os.environ
) -> str:
    """``api_version``, else ``GOOGLE_GENAI_API_VERSION`` (``beta`` meaning ``default``, the
    service's beta version), else ``default``."""
    if api_version:
        return api_version
    env = environ.get(API_VERSION_VARIABLE, "").strip()
    if env == "beta":
        return default
    return env or default


__all__ = ["API_VERSION_VARIABLE", "api_version_from_env"]
