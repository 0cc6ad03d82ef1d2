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
from device.config.paths import check_writable_file
from device.config.sections.model import VertexPlace
from device.config.text import TOPIC_SAFE, describe
from device.config.values import no_empty_token, shown


def validate(config: Config) -> Config:
    """Check what the values need from the world: files that exist, an API key.

    The values themselves were checked when the Config was made.
    """
    perception, outputs = config.perception, config.outputs
    if perception.detector is not None:
        check_model_file(perception.detector)
    if perception.backend == "openvino":
        from models.openvino_backend import openvino_available

        why_not = openvino_available()
        if why_not:
            raise ConfigError(f"--backend openvino: {why_not}")
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
    from device.vision.tracker import TrackerConfig, can_follow

    if config.has_scene and not can_follow(1 / config.detection_fps()):
        # A crossing or a stay is a person followed from one detection to the next.
        raise ConfigError(
            f"lines and zones need more than {1 / TrackerConfig.max_lost_s:g} detections a "
            f"second to follow people (--detect-fps is {config.detection_fps():g})"
        )
    check_tokens(config)
    check_device_id(config)
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
        from device.files.input_file import TOKEN_MAX, check_input

        try:
            check_input(model.token_file, TOKEN_MAX)
        except FileNotFoundError:
            raise ConfigError(f"--token-file {model.token_file}: no such file") from None
        except OSError as exc:
            raise ConfigError(f"--token-file {model.token_file}: {exc.strerror}") from None


def check_device_id(config: Config) -> None:
    """With MQTT, the device id names topics and Home Assistant's ids: Home Assistant
    takes letters, digits, - and _ in a discovery topic's ids, MQTT no + or # in a topic."""
    device_id = config.device.device_id
    if config.outputs.mqtt and not TOPIC_SAFE.fullmatch(device_id):
        where = config.given("device_id") or "--device-id"
        raise ConfigError(
            f"{where} {shown(device_id)} cannot name MQTT topics "
            f"({config.given('mqtt') or '--mqtt'} is set): use letters, digits, - and _"
        )


def read_token(path: Path) -> str:
    """The first line of a token file (``--http-token-file``), checked like a flag's."""
    from device.files.input_file import TOKEN_MAX, read_input

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
    from device.files.input_file import MODEL_MAX, check_input

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
    _check_vertex(found.project, found.location, found.base_url)
    return VertexPlace(project=found.project, location=found.location, base_url=found.base_url)


def _check_vertex(project: str, location: str, base_url: str | None) -> None:
    """What the SDK builds of these: the host ``{location}-aiplatform.googleapis.com`` and
    the path ``projects/{project}/locations/{location}``, each taken as it is."""
    from device.config.urls import check_url, host_problem

    problem = host_problem(f"{location}-aiplatform.googleapis.com")
    if problem is not None:
        raise ConfigError(
            f"GOOGLE_CLOUD_LOCATION {location!r} cannot name the host the SDK connects to "
            f"({location}-aiplatform.googleapis.com): it {problem}"
        )
    odd = next((c for c in project if c in "/?#%" or not "\x20" < c < "\x7f"), None)
    if odd is not None:
        # One segment of the URL's path, as the SDK writes it in: a / would make two.
        raise ConfigError(
            f"GOOGLE_CLOUD_PROJECT {project!r} has {describe(odd)}, which a project id "
            "never has (it is a part of each request's URL)"
        )
    if base_url is not None:
        try:
            check_url(base_url, ("http", "https"))
        except ValueError as exc:
            raise ConfigError(f"GOOGLE_VERTEX_BASE_URL {exc}") from None


# The SDK prefers GOOGLE_API_KEY when both are set; so do we, never to report one key
# while the client uses the other.
API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")


def check_gemini_env(config: Config, environ: Mapping[str, str] = os.environ) -> None:
    """The SDK's own variables that a Gemini model's connections are made of: the API
    version (one segment of each request's path), the Gemini API's base URL and the key."""
    if not config.uses_gemini:
        return  # the local model reads none of them
    version = environ.get("GOOGLE_GENAI_API_VERSION", "").strip()
    odd = next((c for c in version if not (c.isascii() and (c.isalnum() or c in "._-"))), None)
    if odd is not None:
        raise ConfigError(
            f"GOOGLE_GENAI_API_VERSION {version!r} has {describe(odd)}: it is one segment of "
            "each request's path (v1beta, v1alpha, v1beta1)"
        )
    if config.model.vertex is not None:
        return  # its base URL, project and location: vertex_from_env
    base_url = environ.get("GOOGLE_GEMINI_BASE_URL", "").strip()
    if base_url:
        from device.config.urls import check_url

        try:
            check_url(base_url, ("http", "https", "ws", "wss"))
        except ValueError as exc:
            raise ConfigError(f"GOOGLE_GEMINI_BASE_URL {exc}") from None
    if not config.uses_tokens:
        check_api_key(environ)


def check_api_key(environ: Mapping[str, str] = os.environ) -> None:
    """The API key the SDK picks goes in an HTTP header: websockets refuses a line break
    in one, and Google's keys are letters, digits, - and _ (a space or an accented letter
    is something pasted with it). Such a key would fail every connection, said only as the
    model's failure; here it is said at start, never shown."""
    for name in API_KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            break
    else:
        return
    odd = next((i for i, c in enumerate(value) if not "\x20" < c < "\x7f"), None)
    if odd is not None:
        char = value[odd]
        what = (
            "a space"
            if char == " "
            else "a line break or a control character"
            if char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F
            else "a character that is not ASCII"
        )
        raise ConfigError(
            f"{name} has {what} at character {odd + 1}: an API key is sent in an HTTP "
            "header, as visible ASCII only (was something pasted with it?)"
        )


def api_key_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    for name in API_KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


__all__ = [
    "api_key_from_env",
    "check_api_key",
    "check_device_id",
    "check_gemini_env",
    "read_token",
    "token_from_env",
    "validate",
    "vertex_from_env",
]
