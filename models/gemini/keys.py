"""The Gemini API key: where it is found, and the error when there is none.

Apart from the client (``models/gemini/client.py``, which loads google-genai) so that a
command can name the error, and find the key, without loading the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")


class MissingApiKey(Exception):
    """No API key was given and none is set in the environment."""

    def __init__(self) -> None:
        super().__init__(
            "no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, which takes "
            "precedence) in this command's environment (a key is read from there only, "
            "never from a flag or a file anyone can list)"
        )


def api_key_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    """The API key the SDK would pick: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY``."""
    for name in API_KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


__all__ = ["API_KEY_VARIABLES", "MissingApiKey", "api_key_from_env"]
