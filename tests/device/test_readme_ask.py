"""The README's ``lookout ask`` examples, run as written, in their order, in a folder of
their own: each exits as it says (0, or the 4 its comment names), the report's job id
goes into the line that reads its counts, and each answer is the one the line promises."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT
from tests.detection_cache import remembered

pytestmark = pytest.mark.slow


def readme_ask_lines() -> list[str]:
    """The command lines of the README's code block under "Ask one question"."""
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index("## Ask one question") :]
    block = section[section.index("```sh\n") + 6 :]
    block = block[: block.index("```")]
    return [line for line in block.splitlines() if line.startswith("lookout ")]


def test_the_readme_shows_ask_of_now_a_report_its_counts_a_log_and_a_refusal() -> None:
    lines = readme_ask_lines()
    assert len(lines) >= 8
    assert any("--events" in line and line.startswith("lookout ask") for line in lines)
    assert any("job-…" in line for line in lines) and any("exit 4" in line for line in lines)


def test_every_readme_ask_example_runs_as_written(tmp_path: Path, detections_folder: Path) -> None:
    job = ""
    said: dict[str, str] = {}
    with remembered(detections_folder):
        for line in readme_ask_lines():
            args = shlex.split(line.replace("job-…", job), comments=True)
            assert args[0] == "lookout"
            done = subprocess.run(
                [*LOOKOUT, *args[1:]], cwd=tmp_path, env=offline_env(), capture_output=True,
                text=True, timeout=240, check=False,
            )  # fmt: skip
            expected = 4 if "exit 4" in line else 0
            assert done.returncode == expected, (line, done.stdout, done.stderr[-800:])
            assert "Traceback" not in done.stderr, line
            said[args[2] if args[1] == "ask" else args[1]] = done.stdout
            if "report for" in line:
                found = re.search(r"\bjob-[0-9a-f]+\b", done.stdout)
                assert found, done.stdout
                job = found.group(0)
    now = said["how many people?"]
    assert re.fullmatch(r"\d+ (person|people) in view \(frame 0 .*\)\.\n", now)
    assert "in zone left" in said["is anyone in the left zone right now?"]
    assert said[f"counts for {job}"].startswith(f"Counts of {job}:\nminute 1: ")
    assert re.search(r"\d+ came in at post\.", said["how many came in today?"])
    assert (
        "left: " in said["how busy was the left zone?"]
        and "at most" in said["how busy was the left zone?"]
    )
    assert "the busiest minute was" in said["when was it busiest?"]
    assert said["how many people wore red?"].startswith("I cannot answer that: ")
    assert "'wore', 'red'" in said["how many people wore red?"]
    # ask wrote nothing into the logs it read: one run in each, lookout run's.
    logged = (tmp_path / "day.jsonl").read_text()
    assert re.findall(r'"command": ?"(\w+)"', logged) == ["run"]
