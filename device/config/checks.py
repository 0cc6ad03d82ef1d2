"""What the settings need from the world, checked once they are known good as values.

Files that must exist or be writable, the status server's token (from its file or the
environment), the API key (the environment only). Each problem is a ConfigError of one
line naming the setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from device.config.errors import ConfigError
from device.config.model import Config
from device.config.model_sections import VertexPlace
from device.config.paths import check_writable_file
from device.config.values import no_empty_token


def validate(config: Config) -> Config:
    """Check what the values need from the world: files that exist, an API key.

    The values themselves were checked when the Config was made.
    """
    perception, outputs = config.perception, config.outputs
    if perception.detector is not None:
        check_model_file(perception.detector)
    for name, path, what in (
        ("events", outputs.events, "file"),
        ("db", outputs.db, "database file"),
    ):
        if path is not None:
            check_writable_file(name, path, what)
    if outputs.http_token_file is not None:
        if outputs.http_token is not None:
            raise ConfigError("give --http-token or --http-token-file, not both")
        config = config.model_copy(update={"http_token": read_token(outputs.http_token_file)})
    # Imported here for start-up time (numpy and the tracker), not to break a cycle.
    from device.tracker import TrackerConfig, can_follow

    if config.has_scene and not can_follow(1 / config.detection_fps()):
        # A crossing or a stay is a person followed from one detection to the next.
        raise ConfigError(
            f"lines and zones need more than {1 / TrackerConfig.max_lost_s:g} detections a "
            f"second to follow people (--detect-fps is {config.detection_fps():g})"
        )
    check_tokens(config)
    if config.uses_gemini and not config.has_gemini_access:
        raise ConfigError(
            f"model {config.model_name()} needs an API key: set GEMINI_API_KEY "
            "(or GOOGLE_GENAI_USE_VERTEXAI with a project and a location, or use --model local)"
        )
    return config


def check_tokens(config: Config) -> None:
    """Ephemeral tokens: from one place, a file that is there or an http(s) URL, and not
    for Vertex AI (tokens are a Gemini API feature)."""
    model = config.model
    if model.token_file is not None and model.token_url is not None:
        raise ConfigError("give --token-file or --token-url, not both")
    if config.uses_tokens and model.vertex is not None:
        raise ConfigError(
            "ephemeral tokens (--token-file, --token-url) are for the Gemini API, not Vertex "
            "AI: unset GOOGLE_GENAI_USE_VERTEXAI or drop the token option"
        )
    if model.token_file is not None:
        from device.input_file import TOKEN_MAX, check_input

        try:
            check_input(model.token_file, TOKEN_MAX)
        except FileNotFoundError:
            raise ConfigError(f"--token-file {model.token_file}: no such file") from None
        except OSError as exc:
            raise ConfigError(f"--token-file {model.token_file}: {exc.strerror}") from None
    if model.token_url is not None and not model.token_url.startswith(("https://", "http://")):
        raise ConfigError("--token-url must be an http:// or https:// URL")


def read_token(path: Path) -> str:
    """The first line of a token file (``--http-token-file``), checked like a flag's."""
    from device.input_file import TOKEN_MAX, read_input

    try:
        # utf-8-sig: an editor's byte-order mark is not part of the token (with it,
        # every client was refused 401 and nothing said why).
        text = read_input(path, TOKEN_MAX).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise ConfigError(f"--http-token-file {path}: {reason}") from None
    token = text.splitlines()[0].strip() if text.strip() else ""
    try:
        return no_empty_token(token)
    except ValueError as exc:
        raise ConfigError(f"--http-token-file {path}: the token {exc}") from None


def check_model_file(path: Path) -> None:
    """``--detector``: a regular file of a model's size, before onnxruntime reads it."""
    from device.input_file import MODEL_MAX, check_input

    try:
        check_input(path, MODEL_MAX)
    except FileNotFoundError:
        raise ConfigError(f"detector model not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"--detector {path}: {exc.strerror}") from None


def token_from_env(environ: Mapping[str, str]) -> str | None:
    """LOOKOUT_HTTP_TOKEN: used only when neither a token nor a token file is given
    (a secret in the environment never overrides one written down)."""
    if "LOOKOUT_HTTP_TOKEN" not in environ:
        return None
    try:
        return no_empty_token(environ["LOOKOUT_HTTP_TOKEN"].strip())
    except ValueError as exc:
        raise ConfigError(f"LOOKOUT_HTTP_TOKEN {exc}") from None


def vertex_from_env(environ: Mapping[str, str] = os.environ) -> VertexPlace | None:
    """Vertex AI as the SDK's variables ask for it (``models/gemini/vertex.py``), or None;
    asked for without a project or a location: a ConfigError of one line."""
    from models.gemini.vertex import VertexError
    from models.gemini.vertex import vertex_from_env as read

    try:
        found = read(environ)
    except VertexError as exc:
        raise ConfigError(str(exc)) from None
    if found is None:
        return None
    return VertexPlace(project=found.project, location=found.location, base_url=found.base_url)


def api_key_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    # The SDK prefers GOOGLE_API_KEY when both are set; do the same so we never
    # report one key while the client uses the other.
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


__all__ = ["api_key_from_env", "read_token", "token_from_env", "validate", "vertex_from_env"]
