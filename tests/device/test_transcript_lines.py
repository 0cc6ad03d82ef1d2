"""Transcripts come in fragments; people read them a sentence per line."""

from __future__ import annotations

import io

from device.outputs.console import ConsoleSink
from device.outputs.transcripts import TranscriptLines
from live.events import Interrupted, Transcript, TurnComplete


def test_fragments_make_a_line_per_sentence_and_a_turn_end_flushes_the_rest() -> None:
    lines = TranscriptLines()
    said = []
    for text in ["Thr", "ee people", " came in.", " One is", " still here"]:
        said += lines.lines(Transcript(text=text, direction="output"))
    said += lines.lines(Transcript(text="how many", direction="input"))
    assert said == [("output", "Three people came in.")]
    assert lines.lines(TurnComplete()) == [
        ("output", "One is still here"),
        ("input", "how many"),
    ]
    assert lines.lines(Transcript(text="Stop", direction="output")) == []
    assert lines.lines(Interrupted()) == [("output", "Stop")]  # a barge-in ends it too
    assert lines.lines(TurnComplete()) == []


def test_the_console_prints_sentences_not_fragments() -> None:
    out = io.StringIO()
    console = ConsoleSink(out)
    for t, text in [(1.0, "Two"), (1.1, " people."), (1.2, " Hello")]:
        console.write(Transcript(t=t, text=text, direction="output"))
    console.write(Transcript(t=1.3, text="hi there", direction="input"))
    console.write(TurnComplete(t=1.5))
    printed = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert printed == ["model (spoken): Two people.", "model (spoken): Hello", "heard: hi there"]
