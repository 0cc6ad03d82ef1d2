"""Every flag of every command says what it does, and what values it takes."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from device.cli_flags import parser
from tests.cli import lookout_in_process


def _actions(p: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((path, command) for command in action._choices_actions)  # their help
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_command_and_flag_has_help() -> None:
    missing = []
    for path, action in _actions(parser(), "lookout"):
        if action.help == argparse.SUPPRESS:
            continue  # an old spelling kept working on purpose, not shown
        flag = f"{path} {'/'.join(action.option_strings) or action.dest}"
        if not (action.help or "").strip():
            missing.append(flag)
    assert not missing, missing


def test_every_bounded_number_setting_shows_its_range_in_help() -> None:
    # A user reads what a value may be before typing one, not in the refusal after:
    # ``lookout count --threshold`` said neither that it is a score nor that it is 0..1.
    from device.config import FIELDS, flag_name
    from device.config.explain import value_range

    helps = {
        a.option_strings[0]: a.help or "" for _, a in _actions(parser(), "") if a.option_strings
    }
    bounded = {flag_name(n): value_range(f) for n, f in FIELDS.items() if value_range(f)}
    assert bounded, "no bounded settings found"
    wrong = [flag for flag, words in bounded.items() if flag in helps and words not in helps[flag]]
    assert not wrong, wrong


def test_version_comes_from_the_package() -> None:
    from importlib import metadata

    result = lookout_in_process("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"lookout {metadata.version('lookout')}"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "--detect-fsp", "5"],
         "lookout: unrecognized argument --detect-fsp (did you mean --detect-fps?) "
         "(see lookout run --help)"),
        (["ask", "how many?", "--dbb", "x.db"],
         "lookout: unrecognized argument --dbb (did you mean --db?) (see lookout ask --help)"),
        (["runn"], "(did you mean run?) (see lookout --help)"),
        (["report", "--outt", "r.html", "--perod", "60"],
         "lookout: unrecognized argument --outt (did you mean --out?) (and --perod) "
         "(see lookout report --help)"),
    ],
)  # fmt: skip
def test_a_mistyped_flag_or_command_is_named_with_the_likely_one_and_its_commands_help(
    argv: list[str], said: str
) -> None:
    done = lookout_in_process(*argv)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert said in line
