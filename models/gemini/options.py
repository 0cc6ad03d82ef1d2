"""``GeminiOptions``: what a Gemini Live session asks for, and the SDK connect config from it.

Defaults, and why:

* Response modalities (``GeminiOptions.response_modalities is None``): ``TEXT`` for a
  Gemini 1.x/2.x model whose name does not mention audio (the half-cascade Live models,
  which accept TEXT), else ``AUDIO``: native-audio models and the 3.x+ Live models only
  accept AUDIO, and AUDIO is accepted by every Live model, so it is also the choice for a
  name we cannot read a version from. With AUDIO, output transcription is requested so
  the session still gets text.
* API version: see ``models/gemini/client.py`` (``resolve_api_version``).
* Turn coverage: ``TURN_INCLUDES_ALL_INPUT``, so an image put before the model as realtime
  video (the ``look`` tool's, ``--send-frames``) is part of the turn; 2.5 Live models default
  to ``TURN_INCLUDES_ONLY_ACTIVITY``, which leaves video sent outside speech out of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from google.genai import types

from live.model import LiveSetup
from models.gemini import sdk_form
from models.gemini.families import FAMILIES, Backend, Capabilities, capabilities

DEFAULT_MODEL = "gemini-3.8-live"

_MODALITIES = {"TEXT": types.Modality.TEXT, "AUDIO": types.Modality.AUDIO}
_VERSION_RE = re.compile(r"gemini-(?:live-)?(\d+)")


def default_modalities(model: str) -> tuple[str, ...]:
    """The response modality a model name gets when none is configured (see module doc)."""
    name = model.lower()
    if "audio" in name:
        return ("AUDIO",)
    match = _VERSION_RE.search(name)
    if match is not None and int(match.group(1)) < 3:
        return ("TEXT",)
    return ("AUDIO",)


def needs_realtime_text(model: str, backend: Backend = Backend.GEMINI_API) -> bool:
    """The model's family closes a session on client content after the first turn (3.1:
    1007, reported by integrators), or is not trusted with it: text goes as realtime text."""
    return capabilities(model, backend).realtime_text_only


def _media_resolution(value: str) -> types.MediaResolution:
    name = value.strip().upper()
    if not name.startswith("MEDIA_RESOLUTION_"):
        name = f"MEDIA_RESOLUTION_{name}"
    try:
        return types.MediaResolution[name]
    except KeyError:
        choices = ", ".join(m.name.removeprefix("MEDIA_RESOLUTION_") for m in types.MediaResolution)
        raise ValueError(f"unknown media resolution {value!r} (one of {choices})") from None


def realtime_input_config(push_to_talk: bool = False) -> types.RealtimeInputConfig:
    """How the server reads realtime input, in one place: every input (video among it: the
    look tool's image) is part of the turn; with push-to-talk the device marks speech
    (activity start/end) and the model's own voice activity detection is off."""
    config = types.RealtimeInputConfig(turn_coverage=types.TurnCoverage.TURN_INCLUDES_ALL_INPUT)
    if push_to_talk:
        config.automatic_activity_detection = types.AutomaticActivityDetection(disabled=True)
    return config


@dataclass(frozen=True)
class GeminiOptions:
    model: str = DEFAULT_MODEL
    # None: by model name (see default_modalities).
    response_modalities: tuple[str, ...] | None = None
    # LOW: 64 tokens per image, plenty for "how many people" and cheap at 1 fps.
    media_resolution: str = "LOW"
    # Sliding-window compression lets a session outlive the context window.
    context_compression: bool = True
    # None: GOOGLE_GENAI_API_VERSION, else v1beta (see gemini_client.resolve_api_version).
    api_version: str | None = None
    # A prebuilt voice name; only used with AUDIO responses.
    voice: str | None = None
    # A microphone is streamed: the model transcribes what it hears (shown and logged).
    listens: bool = False
    # Push-to-talk: the device marks when speech starts and ends (activity start/end);
    # the model's own voice activity detection is off.
    push_to_talk: bool = False
    # Typed text and text emissions as realtime text (None: by the model's family,
    # needs_realtime_text), not client content.
    realtime_text: bool | None = None
    # The model family whose wire forms to use (one of FAMILIES; None: by model name).
    family: str | None = None
    # Where the model runs: the Gemini API, or Vertex AI (which takes fewer fields). None:
    # the client's (GeminiLiveModel sets it); read as the Gemini API until then.
    backend: Backend | None = None
    # A tool call's image (look) inside its FunctionResponse ``parts`` instead of as
    # realtime video ahead of the answer. Off: no document says Live reads ``parts``, and
    # integrators report 400s on 2.x; for a family that is shown to read them.
    image_parts: bool = False

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("model name is empty")
        unknown = [m for m in self.response_modalities or () if m.upper() not in _MODALITIES]
        if unknown or self.response_modalities == ():
            raise ValueError(
                f"unknown response modalities {list(self.response_modalities or ())}; "
                f"use TEXT or AUDIO"
            )
        _media_resolution(self.media_resolution)
        if self.family is not None and self.family not in FAMILIES:
            raise ValueError(f"unknown model family {self.family!r} (one of {', '.join(FAMILIES)})")

    @property
    def capabilities(self) -> Capabilities:
        """What the model's family takes on the wire (models/gemini/families.py)."""
        return capabilities(self.model, self.backend or Backend.GEMINI_API, self.family)

    @property
    def text_as_realtime(self) -> bool:
        if self.realtime_text is not None:
            return self.realtime_text
        return self.capabilities.realtime_text_only

    @property
    def modalities(self) -> tuple[str, ...]:
        chosen = self.response_modalities or default_modalities(self.model)
        return tuple(m.upper() for m in chosen)

    def connect_config(self, setup: LiveSetup) -> types.LiveConnectConfig:
        """The SDK config for one connection: tools, modalities, compression, resumption."""
        modalities = self.modalities
        audio = "AUDIO" in modalities
        config = types.LiveConnectConfig(
            response_modalities=[_MODALITIES[m] for m in modalities],
            media_resolution=_media_resolution(self.media_resolution),
            # Always on: without it the server sends no resumption handles, and a fresh
            # session (handle None) is how every session starts.
            session_resumption=types.SessionResumptionConfig(handle=setup.resumption_handle),
            realtime_input_config=realtime_input_config(self.push_to_talk),
        )
        if setup.system_instruction:
            config.system_instruction = setup.system_instruction
        if setup.tools:
            declarations = [sdk_form.declaration(d) for d in setup.tools]
            if not self.capabilities.async_calls:
                # A family with synchronous calls only is not offered NON_BLOCKING ones.
                declarations = [d.model_copy(update={"behavior": None}) for d in declarations]
            config.tools = [types.Tool(function_declarations=declarations)]
        if audio:
            config.output_audio_transcription = types.AudioTranscriptionConfig()
            if self.voice:
                config.speech_config = types.SpeechConfig(
                    voice_config=types.VoiceConfig(
                        prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=self.voice)
                    )
                )
        if self.listens:
            config.input_audio_transcription = types.AudioTranscriptionConfig()
        if self.context_compression:
            config.context_window_compression = types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            )
        return config


__all__ = [
    "DEFAULT_MODEL",
    "GeminiOptions",
    "default_modalities",
    "needs_realtime_text",
    "realtime_input_config",
]
