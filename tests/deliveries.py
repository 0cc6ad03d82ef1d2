"""What a model was told, checked against what the device saw."""

from __future__ import annotations

from typing import Any


def assert_every_change_accounted_for(
    delivered: list[dict[str, Any]],
    counts: list[tuple[int, int | None]],
    may_be_untold: int = 0,
) -> None:
    """Each change reached the model once, in order: alone, or merged while it was away.

    A merged emission carries the newest count, the count the model last heard as
    ``previous``, and how many changes it stands for. A count that became unknown
    as the run ended (the source closed with the session) may have had no one left
    to tell; so may the last ``may_be_untold`` changes of a run stopped mid-stream (seen
    while the stop was under way).
    """
    position = 0
    for response in delivered:
        merged = int(response.get("while_away", {}).get("changes", 1))
        last = counts[position + merged - 1]
        assert response["people"] == last[0], (response, counts[position : position + merged])
        assert response["previous"] == counts[position][1]
        position += merged
    if position == len(counts) - 1 and counts[-1][0] is None:
        return
    assert len(counts) - may_be_untold <= position <= len(counts), (position, counts)
