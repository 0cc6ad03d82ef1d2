"""A number with its noun in agreement: ``1 emission``, ``2 emissions``, ``1,024 events``.

Every count a person reads goes through ``counted``, so no line says "1 emissions".
"""

from __future__ import annotations


def counted(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and ``noun`` (``nouns`` when not one; by default ``noun`` + "s")."""
    word = noun if n == 1 else (nouns or noun + "s")
    return f"{n:,} {word}"


__all__ = ["counted"]
