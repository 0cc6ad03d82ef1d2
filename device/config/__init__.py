"""Lookout's configuration, by concern.

- ``sections/`` (``base``, ``vision``, ``model``, ``outputs``): every
  setting, one pydantic model per concern (source, perception, scene; model, audio;
  device, outputs): type, default, bounds and description, once.
- ``model``: ``Config``, the sections composed; flat names routed to their section.
- ``layers``: defaults < profile < TOML < ``LOOKOUT_`` variables < flags; ``build``.
- ``checks``: what the values need from the world (files, token, API key).
- ``explain``: a validation error as one line naming the setting as the user wrote it.
- ``values``, ``scene/``: the kinds of value, and lines and zones (their specs, and their
  write-back into the file: ``scene/file``, ``scene/layout``); ``urls``, ``text``: the
  rules of what uses a URL, a host name or a name (paho, getaddrinfo, urllib, a terminal).
- ``detector/`` (``choice``, ``profiles``): the backend and precision the settings mean on
  this machine, and presets for a CPU; ``paths``, ``device_id``: the files a run writes,
  the default device id.

A leaf of ``device``: perception, outputs and the app read it; it imports none of them
(``paths`` and ``checks`` load what they check lazily, for start-up time).
"""

from device.config.checks import api_key_from_env
from device.config.errors import COMMAND_LINE, ENVIRONMENT, ConfigError
from device.config.layers import (
    SYSTEM_CONFIG,
    apply,
    build,
    env_name,
    flag_name,
    load_file,
    parse_flags,
)
from device.config.model import FIELDS, SECTION_OF, SECTIONS, SETTINGS, Config, value_of
from device.config.scene.specs import LineSpec, ZoneSpec

__all__ = [
    "COMMAND_LINE",
    "ENVIRONMENT",
    "FIELDS",
    "SECTIONS",
    "SECTION_OF",
    "SETTINGS",
    "SYSTEM_CONFIG",
    "Config",
    "ConfigError",
    "LineSpec",
    "ZoneSpec",
    "api_key_from_env",
    "apply",
    "build",
    "env_name",
    "flag_name",
    "load_file",
    "parse_flags",
    "value_of",
]
