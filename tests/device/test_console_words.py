"""Numbers a person reads agree with their nouns: "1 emission", never "1 emissions"."""

from __future__ import annotations

import io
import re

from device.outputs.console import ConsoleSink
from live.events import StreamStopped
from live.util.plural import counted
from tests.datafiles import REPO_ROOT


def test_a_stream_that_emitted_once_says_one_emission() -> None:
    out = io.StringIO()
    console = ConsoleSink(out)
    console.write(StreamStopped(t=1.0, id="c1", name="count_people", reason="stopped", emissions=1))
    console.write(StreamStopped(t=2.0, id="c2", name="count_people", reason="stopped", emissions=2))
    text = out.getvalue()
    assert "(1 emission)" in text and "(2 emissions)" in text, text


def test_counted_agrees_and_groups_thousands() -> None:
    assert counted(1, "event") == "1 event"
    assert counted(0, "event") == "0 events"
    assert counted(1024, "frame") == "1,024 frames"
    assert counted(2, "person", "people") == "2 people"


# A number put straight before a plural noun in an f-string: "{n} events".
_BARE = re.compile(r"\{[^{}]*\}\s+(emissions|events|frames|changes|questions|runs)\b")


def test_no_message_puts_a_bare_number_before_a_plural_noun() -> None:
    found = []
    for folder in ("device", "live", "tools"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if {"audio", "feeds"} & set(path.parts) or path.name.startswith("report"):
                continue  # another change owns these (feeds: "{size} frames" is no number)
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if _BARE.search(line) and 'f"' in line:
                    found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
