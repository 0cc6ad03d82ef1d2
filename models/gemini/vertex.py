"""Vertex AI: where a Vertex client points, read from the SDK's own environment variables.

``GOOGLE_GENAI_USE_VERTEXAI=true`` (or ``GOOGLE_GENAI_USE_ENTERPRISE``, which the SDK
prefers) with ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` and application default
credentials (``gcloud auth application-default login``, ``GOOGLE_APPLICATION_CREDENTIALS``, a
metadata server) makes Lookout's Gemini models run on Vertex AI.

Traps of the SDK (google-genai 3.6.1) this module keeps the user out of:

* ``GOOGLE_VERTEX_BASE_URL`` is read only when ``vertexai=True`` is passed to
  ``genai.Client`` explicitly; the client here always passes it.
* A custom base URL without an explicit project *and* location is taken for an API gateway:
  no credentials are sent and the model name is not made a resource name. Project and
  location are therefore required (one line naming the variable), and always passed.
* The API version on Vertex is ``v1beta1`` unless ``GOOGLE_GENAI_API_VERSION`` says otherwise
  (the Gemini API's ``v1beta`` does not exist there).

Nothing here imports the SDK or google-auth at module level: the configuration reads
``vertex_from_env`` before anything heavy is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from models.gemini.api_version import api_version_from_env

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

VERTEX_API_VERSION = "v1beta1"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
_TRUE = ("true", "1")


class VertexError(ValueError):
    """Vertex AI is asked for but cannot be used as configured (said in one line)."""


class VertexTarget(Protocol):
    """Where a Vertex AI client points (``VertexSettings``, or the configuration's own)."""

    @property
    def project(self) -> str: ...

    @property
    def location(self) -> str: ...

    @property
    def base_url(self) -> str | None: ...


@dataclass(frozen=True)
class VertexSettings:
    """Where a Vertex AI client points: a project, a location, and a base URL (None: the
    SDK's ``https://{location}-aiplatform.googleapis.com``)."""

    project: str
    location: str
    base_url: str | None = None


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    value = environ.get(name)
    return None if value is None else value.strip().lower() in _TRUE


def vertex_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """The environment asks for Vertex AI, as the SDK reads it (``_ENTERPRISE`` first)."""
    enterprise = _flag(environ, "GOOGLE_GENAI_USE_ENTERPRISE")
    if enterprise is not None:
        return enterprise
    return bool(_flag(environ, "GOOGLE_GENAI_USE_VERTEXAI"))


def vertex_from_env(environ: Mapping[str, str] = os.environ) -> VertexSettings | None:
    """The Vertex AI settings the environment gives; None when Vertex is not asked for.

    Raises ``VertexError`` (one line) when it is asked for without a project or a location.
    """
    if not vertex_requested(environ):
        return None
    project = environ.get("GOOGLE_CLOUD_PROJECT", "").strip()
    location = environ.get("GOOGLE_CLOUD_LOCATION", "").strip()
    base_url = environ.get("GOOGLE_VERTEX_BASE_URL", "").strip() or None
    missing = [
        name
        for name, value in (("GOOGLE_CLOUD_PROJECT", project), ("GOOGLE_CLOUD_LOCATION", location))
        if not value
    ]
    if missing and base_url:
        raise VertexError(
            f"GOOGLE_VERTEX_BASE_URL without {' and '.join(missing)}: the SDK would take it "
            "for a gateway and send no credentials; set both with GOOGLE_GENAI_USE_VERTEXAI"
        )
    if missing:
        raise VertexError(
            f"GOOGLE_GENAI_USE_VERTEXAI is on but {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set (Vertex AI needs a project and a "
            "location, such as us-central1)"
        )
    return VertexSettings(project=project, location=location, base_url=base_url)


def vertex_api_version(
    api_version: str | None = None, environ: Mapping[str, str] = os.environ
) -> str:
    """``api_version``, else ``GOOGLE_GENAI_API_VERSION`` (``beta``: v1beta1), else v1beta1."""
    return api_version_from_env(api_version, VERTEX_API_VERSION, environ)


def default_credentials() -> Credentials:
    """Application default credentials (``google.auth.default``); ``VertexError`` in one
    line when there are none."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    from device.files.input_file import CREDENTIALS_MAX, check_input

    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    try:  # google-auth reads it whole: a named pipe would hang the start, /dev/zero fill it
        if named:
            check_input(Path(named), CREDENTIALS_MAX)
    except FileNotFoundError:
        pass  # said below, in google-auth's words
    except OSError as exc:
        raise VertexError(f"GOOGLE_APPLICATION_CREDENTIALS {named}: {exc.strerror}") from None
    try:
        found: tuple[Any, Any] = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError as exc:
        first = " ".join(str(exc).split())[:160]
        raise VertexError(
            "Vertex AI needs application default credentials (gcloud auth "
            f"application-default login, or GOOGLE_APPLICATION_CREDENTIALS): {first}"
        ) from None
    credentials: Credentials = found[0]
    return credentials


def credential_secrets(credentials: object) -> tuple[str, ...]:
    """The access token the credentials hold now, to keep out of messages and logs."""
    token = getattr(credentials, "token", None)
    return (token,) if isinstance(token, str) and token else ()


__all__ = [
    "SCOPES",
    "VERTEX_API_VERSION",
    "VertexError",
    "VertexSettings",
    "VertexTarget",
    "credential_secrets",
    "default_credentials",
    "vertex_api_version",
    "vertex_from_env",
    "vertex_requested",
]
