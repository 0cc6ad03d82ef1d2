"""``Config``: the sections composed into one validated value, and the settings by name.

``Config`` holds one model per concern (``config.perception.detect_fps``). It is also
built from flat names (``Config(detect_fps=5)``, a flat TOML key): ``nest`` puts each
setting into its section, so an existing flat file means the same as a sectioned one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic.fields import FieldInfo

from device.config.cameras import MAIN, CameraSettings, merge_cameras
from device.config.errors import ConfigError
from device.config.explain import explain
from device.config.sections.base import Section
from device.config.sections.model import AudioSettings, ModelSettings
from device.config.sections.outputs import DeviceSettings, OutputSettings
from device.config.sections.vision import PerceptionSettings, SceneSettings, SourceSettings
from device.config.values import DETECT_FPS, SCENE_DETECT_FPS

DEFAULT_GEMINI_MODEL = "gemini-3.8-live"

SECTIONS: dict[str, type[Section]] = {
    "source": SourceSettings,
    "perception": PerceptionSettings,
    "scene": SceneSettings,
    "model": ModelSettings,
    "audio": AudioSettings,
    "device": DeviceSettings,
    "outputs": OutputSettings,
}
# Every setting by its name (unique across sections), and the section it is in.
FIELDS: dict[str, FieldInfo] = {
    name: field for section in SECTIONS.values() for name, field in section.model_fields.items()
}
SECTION_OF: dict[str, str] = {
    name: key for key, section in SECTIONS.items() for name in section.model_fields
}
# Secrets: from the environment only, never a flag, a key or a LOOKOUT_ variable.
ENV_ONLY = frozenset({"api_key", "vertex"})
SETTINGS: tuple[str, ...] = tuple(name for name in FIELDS if name not in ENV_ONLY)


def is_section(key: str, value: object) -> bool:
    """``key = value`` is a section's table (``source`` and ``model`` are also settings:
    their values are never tables, so a table means the section)."""
    return key in SECTIONS and isinstance(value, Mapping | Section)


def _section_values(value: Mapping[str, Any] | Section) -> dict[str, Any]:
    if isinstance(value, Section):
        return {name: getattr(value, name) for name in type(value).model_fields}
    return dict(value)


def nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat setting names and section tables as ``{section: {name: value}}``.

    Keys that are neither stay where they are, for validation to refuse them.
    """
    nested: dict[str, Any] = {}
    for key, value in values.items():
        if is_section(key, value):
            nested.setdefault(key, {}).update(_section_values(value))
        elif key in SECTION_OF:
            nested.setdefault(SECTION_OF[key], {})[key] = value
        else:
            nested[key] = value
    return nested


class Config(BaseModel):
    """Every setting of a device, by concern. Updates are re-validated (ConfigError)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, protected_namespaces=())

    source: SourceSettings = Field(default_factory=SourceSettings)
    perception: PerceptionSettings = Field(default_factory=PerceptionSettings)
    scene: SceneSettings = Field(default_factory=SceneSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    audio: AudioSettings = Field(default_factory=AudioSettings)
    device: DeviceSettings = Field(default_factory=DeviceSettings)
    outputs: OutputSettings = Field(default_factory=OutputSettings)
    # Named cameras, each the settings above overridden by its own (``cameras.py``); none:
    # the device has one camera, ``main``, made of the settings above alone.
    cameras: dict[str, CameraSettings] = Field(default_factory=dict)
    # Which settings a user gave, and how their source spells each (``--http``,
    # ``LOOKOUT_HTTP``, ``lookout.toml: http``): a value equal to its default may still be
    # one the user chose (an address that must not move), which the values cannot say.
    _given: dict[str, str] = PrivateAttr(default_factory=dict)
    # The configuration file the settings were read from (None: none was): where the
    # lines and zones edited on the status page are written back.
    _file: Path | None = PrivateAttr(default=None)
    # The camera these settings are of (``camera()``); a device's own: its first camera.
    _camera: str | None = PrivateAttr(default=None)
    # These are one camera's settings, of a device that names its cameras.
    _named: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _by_section(cls, data: Any) -> Any:
        return nest(data) if isinstance(data, Mapping) else data

    @classmethod
    def of(cls, **settings: Any) -> Self:
        """A Config from settings by their flat names (``Config.of(detect_fps=5)``),
        validated (ConfigError); each of them counts as given."""
        return validated(cls, settings, str).with_given({name: name for name in settings})

    def with_given(self, where: Mapping[str, str]) -> Self:
        """This config, recording that the user gave these settings (name: as spelled)."""
        self._given = {**self._given, **where}
        return self

    def read_from(self, path: Path | None) -> Self:
        """This config, recording the configuration file it was read from."""
        self._file = path
        return self

    @property
    def file(self) -> Path | None:
        """The configuration file this config was read from (None: none was)."""
        return self._file

    @property
    def camera_names(self) -> list[str]:
        """The device's cameras, in the order configured (``main`` when none is named)."""
        return list(self.cameras) or [self._camera or MAIN]

    @property
    def camera_name(self) -> str:
        """The camera these settings are of (a device's own settings: its first camera)."""
        return self._camera or self.camera_names[0]

    @property
    def named_cameras(self) -> bool:
        """Cameras are named in the configuration (a device of one camera, ``main``,
        names none: its outputs are as they were before cameras had names)."""
        return bool(self.cameras) or self._named

    def camera(self, name: str) -> Self:
        """The settings of camera ``name``: the device's, with the camera's own over them
        (ConfigError: no such camera)."""
        if name not in self.camera_names:
            raise ConfigError(f"no camera named {name!r} (cameras: {', '.join(self.camera_names)})")
        own = self.cameras.get(name)
        data = merged(self, camera_values(own) if own is not None else {})
        data["cameras"] = {}
        view = validated(type(self), data, lambda key: f"camera {name}: {key}")
        view._given, view._file, view._camera = dict(self._given), self._file, name
        view._named = bool(self.cameras)
        return view

    def given(self, name: str) -> str | None:
        """How the user gave setting ``name`` (``--http``, ``cfg.toml: http``), or None
        when it is the default (or a profile's choice)."""
        return self._given.get(name)

    def detection_fps(self) -> float:
        """The detector's rate: as set, else what the configured lines and zones need."""
        if self.perception.detect_fps is not None:
            return self.perception.detect_fps
        return SCENE_DETECT_FPS if self.has_scene else DETECT_FPS

    @property
    def has_scene(self) -> bool:
        """Lines or zones are configured."""
        return bool(self.scene.lines or self.scene.zones)

    def model_name(self) -> str:
        if self.model.model:
            return self.model.model
        return DEFAULT_GEMINI_MODEL if self.has_gemini_access else "local"

    @property
    def uses_gemini(self) -> bool:
        return self.model_name() != "local"

    @property
    def has_gemini_access(self) -> bool:
        """An API key or Vertex AI is set in the environment, or ephemeral tokens are given."""
        return bool(self.model.api_key) or self.model.vertex is not None or self.uses_tokens

    @property
    def uses_tokens(self) -> bool:
        """The live model connects with ephemeral tokens (--token-file, --token-url)."""
        return self.model.token_file is not None or self.model.token_url is not None

    def secrets(self) -> tuple[str, ...]:
        """What is scrubbed from everything served or sent to a model, wherever it turns
        up: the keys, the token, and the secret parts of the camera's and broker's URLs."""
        # Imported here: the live package loads the model SDK, which the CLI's refusals
        # of a mistyped setting must not wait for.
        from live.util.redact import url_secrets

        found = (self.model.api_key, self.outputs.http_token, self.mqtt_password())
        sources = [self.source.source, *(getattr(c, "source", None) for c in self.cameras.values())]
        urls = (
            *(secret for source in sources for secret in url_secrets(source)),
            *url_secrets(self.outputs.mqtt),
            *url_secrets(self.model.token_url),
        )
        return tuple(s for s in (*found, *urls) if s)

    def mqtt_password(self) -> str | None:
        if not self.outputs.mqtt:
            return None
        from urllib.parse import urlsplit

        try:
            return urlsplit(self.outputs.mqtt).password
        except ValueError:
            return None

    def flat(self) -> dict[str, Any]:
        """Every setting by its name (the api_key too: keep it out of anything shown)."""
        return {name: value_of(self, name) for name in FIELDS}

    def dump_flat(self) -> dict[str, Any]:
        """Every setting but the secrets, by name, as JSON values (the run event's shape,
        which reports of older logs read too)."""
        data: dict[str, Any] = {}
        for key in SECTIONS:
            data |= getattr(self, key).model_dump(mode="json")  # api_key is never dumped
        if self.cameras:
            data["cameras"] = {
                name: camera.model_dump(mode="json", exclude_none=True)
                for name, camera in self.cameras.items()
            }
        return data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; pydantic's does not validate ``update`` (flat names or sections), this
        one does (ConfigError)."""
        copied = super().model_copy(deep=deep)
        if not update:
            return copied
        rebuilt = validated(type(copied), merged(copied, update), str)
        return rebuilt.with_given(self._given).read_from(self._file)

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(explain(exc, type(self), str)) from None


def value_of(config: Config, name: str) -> Any:
    """A setting by its flat name, for code that goes over settings by name."""
    return getattr(getattr(config, SECTION_OF[name]), name)


def merged(config: Config, updates: Mapping[str, Any]) -> dict[str, Any]:
    """``config``'s values (as sections) with ``updates`` (flat or sectioned) over them."""
    data: dict[str, Any] = {key: _section_values(getattr(config, key)) for key in SECTIONS}
    data["cameras"] = {name: camera_values(c) for name, c in config.cameras.items()}
    for key, value in nest(updates).items():
        if key in SECTIONS and isinstance(value, dict):
            data[key] = data[key] | value
        elif key == "cameras" and isinstance(value, Mapping):
            data[key] = merge_cameras(data[key], value)
        else:
            data[key] = value
    return data


def camera_values(camera: BaseModel) -> dict[str, Any]:
    """What a camera sets for itself, by setting name (its unset ones left out)."""
    return {
        name: value
        for name in type(camera).model_fields
        if (value := getattr(camera, name)) is not None
    }


M = TypeVar("M", bound=BaseModel)


def validated(
    model: type[M], data: Mapping[str, Any], where: Callable[[str], str], *, strict: bool = False
) -> M:
    """``model`` from ``data``; a mistake is one line naming the setting by ``where``."""
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise ConfigError(explain(exc, model, where)) from None


__all__ = [
    "DEFAULT_GEMINI_MODEL",
    "ENV_ONLY",
    "FIELDS",
    "SECTIONS",
    "SECTION_OF",
    "SETTINGS",
    "Config",
    "camera_values",
    "is_section",
    "merged",
    "nest",
    "validated",
    "value_of",
]
