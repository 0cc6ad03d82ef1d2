"""The settings of the live model and of the voice it hears and speaks with."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from device.config.sections.base import Section, unset
from device.config.values import (
    MAX_FPS,
    EmitMode,
    FilePath,
    HttpUrl,
    ModelFamily,
    ModelName,
    OnOff,
    Scheduling,
    SendFrames,
    Utf8Text,
)


class VertexPlace(BaseModel):
    """Where Gemini runs on Vertex AI (from the SDK's environment variables only:
    ``models/gemini/vertex.py`` reads them); None in ``ModelSettings.vertex``: the Gemini API."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project: str
    location: str
    base_url: str | None = None


class ModelSettings(Section):
    """The live model: which, what it is sent, how it is told, how hard to insist on it."""

    model: ModelName | None = Field(
        default=None,
        description="local, or a Gemini model name",
        json_schema_extra=unset("a Gemini model when an API key is set, else local"),
    )
    send_frames: SendFrames = Field(
        default=False,
        description="also send frames to the model (at most --model-fps, at most --max-side px): "
        "the flag alone, or on, for a device of one camera; with several, the camera's name "
        "(a camera in privacy mode is never sent)",
        json_schema_extra={"flag_const": "on", "flag_metavar": "CAMERA"},
    )
    model_fps: float = Field(
        default=1.0,
        gt=0,
        le=MAX_FPS,
        description="frames per second sent to the model with --send-frames (its lane only: "
        "the detector's rate is --detect-fps); formerly --fps",
    )
    look_per_minute: int = Field(
        default=4,
        ge=0,
        le=60,
        description="how many times a minute the model may look at the scene (its look tool; "
        "0: never)",
    )
    budget_tokens: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="a spending cap: tokens per rolling hour (from the model's usage "
        "reports); at 80 % frames and looks stop, at 100 % updates reach the model at most "
        "once a minute",
        json_schema_extra=unset("no cap"),
    )
    budget_session: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="a spending cap: tokens for the whole run (as --budget-tokens, but it "
        "never frees room)",
        json_schema_extra=unset("no cap"),
    )
    emit: EmitMode | None = Field(
        default=None,
        description="how tool results reach the model (text: for models with synchronous "
        "calls only)",
        json_schema_extra=unset("by the model's family: text for synchronous calls only"),
    )
    family: ModelFamily = Field(
        default="auto",
        description="the Gemini Live model family whose wire forms to use (3.8, 3.1, 2.5, "
        "or safe: what every family takes); auto: by the model's name",
    )
    scheduling: Scheduling = Field(
        default="when_idle", description="when the model reacts to a count change"
    )
    system_instruction: Utf8Text | None = Field(
        default=None,
        description="system instruction given to the model",
        json_schema_extra=unset("the built-in one"),
    )
    require_model: bool = Field(
        default=False,
        description="exit 1 when the model cannot be connected after --model-attempts attempts "
        "(without it the device keeps running and retrying)",
    )
    model_attempts: int = Field(
        default=6, ge=1, le=1000, description="connection attempts before --require-model gives up"
    )
    fallback_after: float = Field(
        default=30.0,
        ge=0,
        le=86400,
        description="seconds without a connected model after which the console says "
        "the count changes itself",
    )
    token_file: FilePath | None = Field(
        default=None,
        description="connect with ephemeral tokens (lookout token) read from this file, "
        "re-read at every connection, instead of an API key on the device",
        json_schema_extra=unset("none"),
    )
    token_url: HttpUrl | None = Field(
        default=None,
        description="connect with ephemeral tokens fetched from this URL (GET), a fresh one "
        "for every connection, instead of an API key on the device",
        json_schema_extra=unset("none"),
    )
    # Not settable from files, flags or LOOKOUT_ variables, never dumped or shown: the key
    # comes from GEMINI_API_KEY or GOOGLE_API_KEY only.
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    # Not settable either: GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT,
    # GOOGLE_CLOUD_LOCATION (and GOOGLE_VERTEX_BASE_URL) only.
    vertex: VertexPlace | None = Field(default=None, exclude=True)


class AudioSettings(Section):
    """The device's voice: what it hears, where it speaks, and when it listens."""

    mic: str | None = Field(
        default=None,
        description="listen: a microphone (its name or number; the flag alone: the default "
        "one), or a WAV file replayed as if spoken",
        json_schema_extra={**unset("no microphone"), "flag_const": "default"},
    )
    speaker: str | None = Field(
        default=None,
        description="speak: a loudspeaker (its name or number; the flag alone: the default "
        "one), or a WAV file that gets exactly what was played",
        json_schema_extra={**unset("no loudspeaker"), "flag_const": "default"},
    )
    push_to_talk: bool = Field(
        default=False,
        description="the microphone is heard only while talk is held (t on the console, "
        "the page's button), instead of the model's own voice detection",
    )
    half_duplex: bool = Field(
        default=False,
        description="mute the microphone while the device speaks (no echo cancellation: "
        "it would hear itself)",
    )
    tts: OnOff = Field(
        default="on",
        description="the local model speaks through espeak-ng on the loudspeaker when it is "
        "installed",
    )


__all__ = ["AudioSettings", "ModelSettings", "VertexPlace"]
