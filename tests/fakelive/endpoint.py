"""How a client finds a running fake: its address, the CA to trust, SDK settings and env.

Shared by the Live fake (``server.py``) and the REST fake (``rest.py``): both serve TLS on
loopback with the throwaway CA of ``certs.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from google import genai
from google.genai import types

from .certs import TestCerts

if TYPE_CHECKING:
    from .server import FakeLiveServer
    from .threaded import ThreadedFakeLiveServer

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_API_VERSION",
    "VERTEX_TOKEN",
    "LiveEndpoint",
    "client_for",
    "write_vertex_credentials",
]

DEFAULT_API_VERSION = "v1beta"
DEFAULT_API_KEY = "fake-live-api-key"
VERTEX_API_VERSION = "v1beta1"
VERTEX_TOKEN = "fake-vertex-access-token"
VERTEX_PROJECT = "fake-project"
VERTEX_LOCATION = "us-central1"

# Environment variables that would make the SDK ignore ours or trust more than our CA.
_CONFLICTING_ENV = (
    "GOOGLE_API_KEY",  # takes precedence over GEMINI_API_KEY in the SDK
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "SSL_CERT_DIR",  # the SDK passes it as capath, adding the system CAs back
)
_PROXY_ENV = frozenset({"http_proxy", "https_proxy", "all_proxy", "ws_proxy", "wss_proxy"})


@dataclass(frozen=True)
class LiveEndpoint:
    """Address and trust material of a running fake; builds SDK settings pointing at it."""

    host: str
    port: int
    certs: TestCerts

    @property
    def base_url(self) -> str:
        # No trailing slash: the SDK appends "/ws/..." verbatim, so "https://h:p/" would give
        # a "//ws/..." path.
        return f"https://{self.host}:{self.port}"

    @property
    def ca_path(self) -> Path:
        return self.certs.ca_path

    def http_options(self, api_version: str = DEFAULT_API_VERSION) -> types.HttpOptions:
        """``types.HttpOptions`` for ``genai.Client``: our base URL, a websocket SSL context that
        trusts only our CA, and no proxy.

        ``async_client_args`` is where the SDK (3.6.1, ``_ensure_websocket_ssl_ctx``) looks for
        the websocket's ``ssl`` context; keys that ``websockets.connect`` accepts (``proxy``,
        ``open_timeout``, ...) are passed through to it, the rest are dropped.
        """
        return types.HttpOptions(
            base_url=self.base_url,
            api_version=api_version,
            async_client_args={"ssl": self.certs.client_ssl_context(), "proxy": None},
        )

    def client(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> genai.Client:
        """A real ``genai.Client`` pointed at the fake (Gemini API mode, never Vertex)."""
        return genai.Client(
            vertexai=False, api_key=api_key, http_options=self.http_options(api_version)
        )

    def vertex_client(
        self, *, project: str = VERTEX_PROJECT, location: str = VERTEX_LOCATION
    ) -> genai.Client:
        """A real Vertex AI ``genai.Client`` pointed at the fake: a project and a location (else
        the SDK takes a custom base URL for a gateway and sends no auth) and a ready access
        token (nothing is refreshed), so the SDK's Vertex paths and converters run."""
        from google.oauth2.credentials import Credentials

        return genai.Client(
            vertexai=True,
            project=project,
            location=location,
            credentials=Credentials(token=VERTEX_TOKEN),  # type: ignore[no-untyped-call]
            http_options=self.http_options(VERTEX_API_VERSION),
        )

    def env(
        self, *, api_version: str = DEFAULT_API_VERSION, api_key: str = DEFAULT_API_KEY
    ) -> dict[str, str]:
        """Environment variables that point a ``genai.Client()`` built from the environment at
        the fake. They are read when the client is constructed."""
        no_proxy = "127.0.0.1,localhost,::1"
        return {
            "GOOGLE_GEMINI_BASE_URL": self.base_url,
            "GOOGLE_GENAI_API_VERSION": api_version,
            "SSL_CERT_FILE": str(self.ca_path),
            "GEMINI_API_KEY": api_key,
            # websockets honours the standard proxy variables; keep loopback off any proxy.
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
        }

    def vertex_env(
        self,
        credentials: Path,
        *,
        project: str = VERTEX_PROJECT,
        location: str = VERTEX_LOCATION,
    ) -> dict[str, str]:
        """The variables a user sets for Vertex AI, pointed at the fake: the SDK's own
        (``GOOGLE_GENAI_USE_VERTEXAI``, project, location, ``GOOGLE_VERTEX_BASE_URL``) and
        application default credentials from ``credentials`` (``write_vertex_credentials``)."""
        no_proxy = "127.0.0.1,localhost,::1"
        return {
            "GOOGLE_GENAI_USE_VERTEXAI": "true",
            "GOOGLE_CLOUD_PROJECT": project,
            "GOOGLE_CLOUD_LOCATION": location,
            "GOOGLE_VERTEX_BASE_URL": self.base_url,
            "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
            "SSL_CERT_FILE": str(self.ca_path),
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
        }

    def vertex_subprocess_env(
        self, credentials: Path, base: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """:meth:`subprocess_env` for Vertex AI: the Gemini API's variables dropped but the
        key, which Vertex must not use, plus :meth:`vertex_env`."""
        out = self.subprocess_env(base)
        for name in ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION"):
            out.pop(name, None)
        out.update(self.vertex_env(credentials))
        return out

    def subprocess_env(
        self,
        base: Mapping[str, str] | None = None,
        *,
        api_version: str = DEFAULT_API_VERSION,
        api_key: str = DEFAULT_API_KEY,
    ) -> dict[str, str]:
        """A full environment for a subprocess: ``base`` (default ``os.environ``) without the
        variables that would override ours, plus :meth:`env`."""
        out = dict(os.environ if base is None else base)
        for name in list(out):
            # Everything the subprocess talks to is on loopback; a proxy setting can only hurt
            # (httpx even fails at genai.Client() construction on a SOCKS ALL_PROXY without
            # socksio installed, before any NO_PROXY matching).
            if name in _CONFLICTING_ENV or name.lower() in _PROXY_ENV:
                del out[name]
        out.update(self.env(api_version=api_version, api_key=api_key))
        return out


def write_vertex_credentials(path: Path, token: str = VERTEX_TOKEN) -> Path:
    """Application default credentials that work offline: an ``authorized_user`` file with a
    ready access token valid for years (google-auth refreshes only an expired token, which
    would need the network). Point ``GOOGLE_APPLICATION_CREDENTIALS`` at it."""
    info = {
        "type": "authorized_user",
        "client_id": "fake-client-id",
        "client_secret": "fake-client-secret",
        "refresh_token": "fake-refresh-token",
        "token": token,
        "expiry": "2099-01-01T00:00:00Z",
    }
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def client_for(
    server: FakeLiveServer | ThreadedFakeLiveServer,
    *,
    api_version: str = DEFAULT_API_VERSION,
    api_key: str = DEFAULT_API_KEY,
) -> genai.Client:
    """A real ``genai.Client`` pointed at ``server`` (see :meth:`LiveEndpoint.http_options`)."""
    return server.endpoint.client(api_version=api_version, api_key=api_key)
