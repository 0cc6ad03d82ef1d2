"""The model family setting: by the model's name unless set, and what the session sends for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from device.app.parts import build_model, session_config
from device.config import Config, build
from live.config import EmitMode
from models.gemini.model import GeminiLiveModel
from tests.cli import lookout_in_process

NO_SYSTEM = Path("/nonexistent/lookout.toml")
KEY = {"GEMINI_API_KEY": "family-test-key"}


def make(flags: dict[str, Any]) -> Config:
    return build(flags, environ=KEY, system_config=NO_SYSTEM)


@pytest.mark.parametrize(
    ("flags", "mode", "family"),
    [
        ({}, EmitMode.FUNCTION_RESPONSE, "3.8"),  # the default model
        ({"model": "gemini-3.1-flash-live-preview"}, EmitMode.TEXT, "3.1"),
        ({"model": "gemini-live-2.5-flash-preview"}, EmitMode.FUNCTION_RESPONSE, "2.5"),
        ({"model": "gemini-9-live"}, EmitMode.TEXT, "safe"),  # unknown: the safe default
        ({"model": "gemini-9-live", "family": "3.8"}, EmitMode.FUNCTION_RESPONSE, "3.8"),
        ({"family": "3.1", "emit": "function_response"}, EmitMode.FUNCTION_RESPONSE, "3.1"),
        ({"model": "local"}, EmitMode.FUNCTION_RESPONSE, None),
    ],
)
def test_the_family_follows_the_name_unless_set_and_decides_how_emissions_go(
    flags: dict[str, Any], mode: EmitMode, family: str | None
) -> None:
    config = make(flags)
    assert session_config(config).emit_mode is mode
    model = build_model(config)
    if family is None:
        assert not isinstance(model, GeminiLiveModel)
    else:
        assert isinstance(model, GeminiLiveModel)
        assert model.options.capabilities.family == family


def test_an_unknown_family_is_refused_in_one_line() -> None:
    result = lookout_in_process("run", "--model", "gemini-3.8-live", "--no-http", "--family=4.0")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lookout: ") and "family" in lines[0]
    assert "3.1" in lines[0]  # the choices are named
