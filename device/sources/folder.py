"""Image folders (or one image file), read in name order at a chosen frame rate."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from device.sources.base import IMAGE_EXTENSIONS, Grabbed, SourceError, UnreadableFrame, as_bgr
from device.sources.image_limit import DEFAULT_MAX_PIXELS, TooLarge, decode_file
from device.vision.frame import Frame


def _natural_key(path: Path) -> list[int | str]:
    # "img2" before "img10", the order a person expects.
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


class ImageFolderSource:
    """The images of a folder (or one image file) in name order, at ``fps`` frames a second."""

    is_camera = False

    def __init__(
        self, path: Path | str, *, fps: float = 1.0, max_pixels: int = DEFAULT_MAX_PIXELS
    ) -> None:
        self.max_pixels = max_pixels
        self.left_out: list[Path] = []  # files of the folder that are not images
        if not fps > 0:
            raise SourceError(f"frame rate for images must be positive, not {fps}")
        self.path = Path(path)
        self.name = str(path)
        self.fps: float | None = fps
        self._fps = fps
        self._lock = threading.Lock()
        self._files = self._list()
        self._index = 0
        self._grabbed: int | None = None  # the image grab() moved to, not yet decoded

    @property
    def frame_count(self) -> int:
        return len(self._files)

    def path_of(self, index: int) -> Path:
        """The image file of frame ``index``."""
        with self._lock:
            return self._files[index]

    def _list(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        if not self.path.is_dir():
            raise SourceError(f"file not found: {self.path}")
        try:
            found = [p for p in self.path.iterdir() if p.is_file() and not p.name.startswith(".")]
            files = [p for p in found if p.suffix.lower() in IMAGE_EXTENSIONS]
            # Not images (a video beside the photos): left out, and said by the caller.
            self.left_out = sorted((p for p in found if p not in files), key=_natural_key)
        except OSError as exc:
            raise SourceError(f"cannot list folder {self.path}: {exc.strerror}") from None
        if not files:
            kinds = ", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS))
            raise SourceError(f"no images ({kinds}) in folder {self.path}")
        return sorted(files, key=_natural_key)

    def open(self) -> None:
        files = self._list()
        with self._lock:
            self._files = files
            self._index = 0
            self._grabbed = None

    def read(self) -> Frame | None:
        if self.grab() is None:
            return None
        return self.retrieve()

    def grab(self) -> Grabbed | None:
        """The next image, not opened: a frame that is not sampled is never decoded."""
        with self._lock:
            index = self._index
            if index >= len(self._files):
                self._grabbed = None
                return None
            self._index += 1
            self._grabbed = index
        return Grabbed(index, index / self._fps)

    def retrieve(self) -> Frame:
        with self._lock:
            index, self._grabbed = self._grabbed, None
            if index is None:
                raise SourceError(f"{self.name}: no image grabbed to decode")
            path = self._files[index]
        try:
            image = decode_file(path, self.max_pixels)
        except TooLarge as exc:
            raise UnreadableFrame(f"image {path} not decoded: {exc}", index=index) from None
        except OSError as exc:
            why = exc.strerror or str(exc)  # not a regular file, too big, unreadable
            raise UnreadableFrame(f"cannot read image {path}: {why}", index=index) from None
        if image is None:
            raise UnreadableFrame(f"cannot read image {path}", index=index)
        return Frame(as_bgr(image), t_media=index / self._fps, index=index, source=self.name)

    def seek(self, index: int) -> None:
        if index < 0:
            raise SourceError(f"{self.name}: cannot seek to frame {index}")
        with self._lock:
            self._index = index
            self._grabbed = None

    def close(self) -> None:
        pass
