"""Every setting in --help does something: the program reads each one.

Settings are read as ``config.<section>.<name>`` (or ``<section>.<name>`` on a section
taken out of it). This walks the program's code (device/, models/, tools/, live/, without
the configuration package itself) and fails for a setting nothing reads, as log_level
once was: in --help and the example config, and never applied.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from device.config import FIELDS, SECTION_OF
from tests.datafiles import REPO_ROOT

PROGRAM = ("device", "models", "tools", "live")
CONFIG_PACKAGE = REPO_ROOT / "device" / "config"
# Read by the configuration itself, checked there: it becomes another setting, or the
# program reads it through a method of Config (which must be called outside it).
READ_BY_THE_CONFIGURATION: dict[str, tuple[str | None, str]] = {
    "http_token_file": (None, "its first line becomes http_token (device/config/checks.py)"),
    "detect_fps": ("detection_fps", "as set, else the rate lines and zones need"),
}


def _files(inside_config: bool) -> list[Path]:
    files = [path for top in PROGRAM for path in (REPO_ROOT / top).rglob("*.py")]
    return [path for path in files if path.is_relative_to(CONFIG_PACKAGE) == inside_config]


@cache
def _reads(inside_config: bool) -> frozenset[tuple[str, str]]:
    """Every ``<section>.<name>`` attribute read in the program, as (section, name)."""
    found: set[tuple[str, str]] = set()
    for path in _files(inside_config):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            owner = node.value
            if isinstance(owner, ast.Attribute):
                found.add((owner.attr, node.attr))
            elif isinstance(owner, ast.Name):
                found.add((owner.id, node.attr))
    return frozenset(found)


def is_read(name: str, *, inside_config: bool = False) -> bool:
    return (SECTION_OF[name], name) in _reads(inside_config)


@pytest.mark.parametrize("name", list(FIELDS))
def test_every_setting_is_read_by_the_program(name: str) -> None:
    if name in READ_BY_THE_CONFIGURATION:
        method, why = READ_BY_THE_CONFIGURATION[name]
        assert is_read(name, inside_config=True), why
        if method is not None:
            assert ("config", method) in _reads(False), f"nothing calls Config.{method}()"
        return
    assert is_read(name), (
        f"nothing in {', '.join(PROGRAM)} reads config.{SECTION_OF[name]}.{name}: "
        "make the setting do what its --help says, or remove it"
    )


def test_the_walk_finds_reads_and_only_reads() -> None:
    # A name no code reads is not found; one that is (in its section) is.
    assert ("perception", "no_such_setting") not in _reads(False)
    assert is_read("threshold") and is_read("log_level")
    # An assignment is not a read.
    tree = ast.parse("config.perception.detect_fps = 3")
    target = tree.body[0].targets[0]  # type: ignore[attr-defined]
    assert isinstance(target, ast.Attribute) and isinstance(target.ctx, ast.Store)
