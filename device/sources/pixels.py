"""The pixel limit of a frame (``--max-image-pixels``), for captures that read a frame's
size before decoding it and for those that can only look after."""

from __future__ import annotations


class FrameTooLarge(Exception):
    """A frame over the pixel limit: not used, and said (one line, without the source)."""


def check_pixels(width: int, height: int, limit: int | None) -> None:
    """Raises ``FrameTooLarge`` for a ``width`` x ``height`` frame over ``limit`` pixels."""
    if limit is not None and width * height > limit:
        raise FrameTooLarge(
            f"is {width}x{height}, {width * height / 1e6:.1f} megapixels, over the limit of "
            f"{limit / 1e6:g} (--max-image-pixels): not used"
        )


__all__ = ["FrameTooLarge", "check_pixels"]
