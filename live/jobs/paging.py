"""Paged results: one page per call and a cursor for the next, each page a plain result.

A result too long for one answer (a report's per-minute counts) is read a page
at a time by a plain tool, so each page is an ordinary one-shot FunctionResponse
and the model decides whether to read on. The cursor is an offset written as
text: opaque to the model, checked when it comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from live.tool import ToolArgumentError

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None  # None: nothing after this page (as far as is known now)
    offset: int


def parse_cursor(cursor: str | None, *, tool: str) -> int:
    """The offset a cursor stands for; ``""``/None is the first page."""
    if cursor is None or cursor.strip() == "":
        return 0
    text = cursor.strip()
    if not text.isdigit() or len(text) > 9:
        shown = text if len(text) <= 20 else text[:17] + "..."
        raise ToolArgumentError(
            f"{tool}: cursor {shown!r} is not one this tool gave out; "
            "pass an empty cursor for the first page, then each next_cursor"
        )
    return int(text)


def paginate(
    items: Sequence[T], cursor: str | None, page_size: int, *, tool: str, more_coming: bool = False
) -> Page[T]:
    """The page of ``items`` at ``cursor``.

    ``more_coming``: the list is still growing (a running job), so the end of
    what exists now gives a cursor to come back with rather than None.
    """
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    offset = parse_cursor(cursor, tool=tool)
    if offset > len(items):
        raise ToolArgumentError(
            f"{tool}: cursor {cursor!r} is past the end ({len(items)} items); "
            "pass an empty cursor to start again"
        )
    chunk = list(items[offset : offset + page_size])
    end = offset + len(chunk)
    if end < len(items) or more_coming:
        next_cursor: str | None = str(end)
    else:
        next_cursor = None
    return Page(chunk, next_cursor, offset)


__all__ = ["Page", "paginate", "parse_cursor"]
