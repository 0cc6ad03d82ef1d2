"""Images too big to decode safely: downscaled while decoding, or refused, never a blow-up.

A 10000x10000 PNG takes 800 MB to decode (and as much again to resize); a Pi
has 1 to 8 GB. The size is read from the file's header first (Pillow reads
only the header until asked for pixels). A JPEG over the limit is decoded at
1/2, 1/4 or 1/8 of its size by libjpeg itself (OpenCV's ``IMREAD_REDUCED_*``),
which never holds the full image; any other format over the limit is refused
with its size, as an unreadable frame (said, and the folder goes on). A file whose
size cannot be read first (a format Pillow does not know, such as Radiance HDR,
which OpenCV decodes by its content whatever the file is called) is refused the
same way: a 100-megapixel HDR named ``.png`` took 1.65 GB to decode.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np

from device.files.input_file import IMAGE_MAX, read_input
from device.sources.base import decode_image

log = logging.getLogger("lookout.source")

DEFAULT_MAX_PIXELS = 50_000_000  # a 48-megapixel phone photo fits; 3 bytes a pixel: 150 MB
_REDUCED = ((2, cv2.IMREAD_REDUCED_COLOR_2), (4, cv2.IMREAD_REDUCED_COLOR_4),
            (8, cv2.IMREAD_REDUCED_COLOR_8))  # fmt: skip


class TooLarge(ValueError):
    """An image over the pixel limit that cannot be decoded smaller."""


class UnknownSize(TooLarge):
    """An image whose size cannot be read before decoding it: it could be any size."""


def header_size(image: Path | BinaryIO) -> tuple[int, int, str] | None:
    """(width, height, format) from the header, or None when Pillow does not know the file."""
    from PIL import Image, UnidentifiedImageError

    try:
        # Our limit is the one that applies; Pillow's own bomb check would raise first.
        Image.MAX_IMAGE_PIXELS = None
        with Image.open(image) as opened:
            width, height = opened.size
            return int(width), int(height), str(opened.format or "")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None


def decode_file(path: Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray | None:
    """BGR pixels of the image at ``path``, at most ``max_pixels``; None if undecodable.

    Raises TooLarge for an image over the limit that cannot be decoded smaller,
    and OSError when the file cannot be read (a named pipe, a file over ``IMAGE_MAX``).
    """
    data = read_input(path, IMAGE_MAX)
    size = header_size(io.BytesIO(data))
    if size is None:
        if not cv2.haveImageReader(str(path)):
            return None  # no decoder knows it either: not an image (said by the caller)
        raise UnknownSize(
            "its size cannot be read before decoding it (not a JPEG, PNG, BMP, TIFF, WebP "
            "or other format Pillow knows), so it is not decoded: convert it to JPEG or PNG"
        )
    return _decode(data, size, max_pixels, str(path))


def decode_jpeg(data: bytes, max_pixels: int, where: str) -> np.ndarray | None:
    """A JPEG's BGR pixels, at most ``max_pixels`` (``decode_file``'s rule), its size read
    from its header first; None when it has no header an image has."""
    size = header_size(io.BytesIO(data))
    return None if size is None else _decode(data, size, max_pixels, where)


def _decode(
    data: bytes, size: tuple[int, int, str], max_pixels: int, where: str
) -> np.ndarray | None:
    width, height, kind = size
    pixels = width * height
    if pixels > max_pixels:
        if kind != "JPEG":
            raise TooLarge(
                f"{width}x{height} is {pixels / 1e6:.0f} megapixels, over the limit of "
                f"{max_pixels / 1e6:.0f} (--max-image-pixels)"
            )
        # The smallest reduction that fits, or the largest there is.
        factor, flag = next(
            ((f, flag) for f, flag in _REDUCED if pixels / f**2 <= max_pixels), _REDUCED[-1]
        )
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), flag)
        if image is not None:
            log.info("%s: %dx%d decoded at 1/%d size", where, width, height, factor)
            if image.shape[0] * image.shape[1] <= max_pixels:
                return np.asarray(image)
        raise TooLarge(
            f"{width}x{height} is {pixels / 1e6:.0f} megapixels, too large even at 1/8 "
            f"size for the limit of {max_pixels / 1e6:.0f} (--max-image-pixels)"
        )
    return decode_image(data)


__all__ = [
    "DEFAULT_MAX_PIXELS",
    "TooLarge",
    "UnknownSize",
    "decode_file",
    "decode_jpeg",
    "header_size",
]
