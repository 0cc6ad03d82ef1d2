"""A settings section: the base of every concern's model, and how a field says its default.

A field's type, default, bounds and one-line description are the setting: its flag
(``--detect-fps``), its TOML key (``detect_fps``, flat or in its section's table
``[perception]``), its variable (``LOOKOUT_DETECT_FPS``), its --help line and its
error messages all come from it. A setting's name is unique across sections, so a flat
key still says which setting it is (a test checks it). The sections, by concern:
``sections.vision`` (source, perception, scene), ``sections.model`` (model, audio),
``sections.outputs`` (device, outputs). A new concern (one camera of several) is one
more section and one more field of ``device.config.model.Config``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from device.config.errors import ConfigError
from device.config.explain import explain


def unset(text: str) -> dict[str, Any]:
    """What a setting means when it is not given, for --help (its default is None)."""
    return {"unset": text}


class Section(BaseModel):
    """One concern's settings; an assignment is validated (a mistake is a ConfigError)."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, validate_assignment=True, protected_namespaces=()
    )

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(explain(exc, type(self), str)) from None


__all__ = ["Section", "unset"]
