"""Frame sources: webcams, video files, network streams, image folders, the Pi camera.

``open_source(spec)`` turns a ``--source`` value into a source, nothing opened
yet; the kinds live in ``opencv``, ``folder`` and ``picamera``, and what they
share (the protocol, errors, the capture-backed base) in ``base``.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from device.files.input_file import file_kind
from device.sources.base import (
    _URL_RE,
    IMAGE_EXTENSIONS,
    PICAMERA_SPECS,
    STREAM_SCHEMES,
    CaptureSource,
    FrameSource,
    Grabbed,
    Grabs,
    SourceError,
    SourceUnavailable,
    UnreadableFrame,
    as_bgr,
    decode_image,
)
from device.sources.folder import ImageFolderSource
from device.sources.image_limit import DEFAULT_MAX_PIXELS
from device.sources.opencv import OpenCVSource
from device.sources.picamera import Picamera2Source
from device.vision.frame import Frame
from live.util.redact import at_after_host, safe_url


def open_source(
    spec: str,
    *,
    clock_now: Callable[[], float],
    folder_fps: float = 1.0,
    max_image_pixels: int = DEFAULT_MAX_PIXELS,
    open_timeout_s: float = 10.0,
    read_timeout_s: float = 10.0,
) -> FrameSource:
    """The source a command-line ``--source`` names; nothing is opened yet.

    Raises SourceError for what can be known without opening: a path that does
    not exist, an empty folder, an unsupported URL scheme.
    """
    text = spec.strip()
    if not text:
        raise SourceError("no source given (a camera index, a file, a folder or a URL)")
    if text.isdigit():
        return OpenCVSource(int(text), clock_now=clock_now)
    if text.lower() in PICAMERA_SPECS:
        return Picamera2Source(clock_now=clock_now)
    match = _URL_RE.match(text)
    if match:
        scheme = match.group(1).lower()
        if scheme == "file":
            text = urlsplit(text).path
        elif scheme in STREAM_SCHEMES:
            if at_after_host(text):
                # FFmpeg would take a piece of the password for the host, and ask the DNS.
                raise SourceError(
                    f"{safe_url(text)}: an @ after the host: write @ / ? # in a password "
                    "as %40 %2F %3F %23 (and an @ in the path as %40)"
                )
            stream = OpenCVSource(
                text,
                clock_now=clock_now,
                open_timeout_s=open_timeout_s,
                read_timeout_s=read_timeout_s,
            )
            stream.max_pixels = max_image_pixels
            return stream
        else:
            raise SourceError(f"unsupported source URL scheme {scheme}:// in {safe_url(text)}")
    path = Path(text).expanduser()
    if path.is_dir():
        return ImageFolderSource(path, fps=folder_fps, max_pixels=max_image_pixels)
    if path.is_file():
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            return ImageFolderSource(path, fps=folder_fps, max_pixels=max_image_pixels)
        video = OpenCVSource(str(path), clock_now=clock_now)
        video.max_pixels = max_image_pixels
        return video
    if path.exists():
        mode = path.stat().st_mode
        if not stat.S_ISCHR(mode):
            # A named pipe would hang the open for ever (FFmpeg waits for a writer).
            raise SourceError(
                f"{path}: {file_kind(mode)}, not a video file, an image folder or a camera"
            )
        return OpenCVSource(str(path), clock_now=clock_now)  # a device node: /dev/video0
    if "," in text:
        # Several cameras are several named --source flags, never one list.
        raise SourceError(
            f"file not found: {safe_url(text)} (several cameras are one --source each, "
            "named: --source door=rtsp://cam/stream --source till=1)"
        )
    raise SourceError(f"file not found: {safe_url(text)}")  # a mistyped URL, perhaps


# What check_decodable passes on as it is: it says the file's problem already.
_SAID_WHOLE = ("cannot open video file", "no frame in it", "--max-image-pixels")


def check_decodable(source: FrameSource) -> None:
    """A file or folder must give a first frame: say so now, not by reconnecting forever.

    A text file named ``x.mp4``, a zero-byte file or ``README.md`` is not a camera
    that might come back; cameras and streams are not checked here (they may be
    down now and up later). Blocking: call before the run starts.
    """
    if source.is_camera:
        return
    what = "images" if isinstance(source, ImageFolderSource) else "a video OpenCV can decode"
    try:
        source.open()
        for _ in range(20):  # a folder may start with a broken image or two
            try:
                frame = source.read()
            except UnreadableFrame:
                continue
            if frame is None:
                break
            return
        raise SourceError(f"{source.name}: no frame in it (not {what})")
    except SourceError as exc:
        message = str(exc)
        if any(said in message for said in _SAID_WHOLE):
            raise
        raise SourceError(f"{source.name}: cannot read a first frame ({message})") from None
    finally:
        source.close()


__all__ = [
    "IMAGE_EXTENSIONS",
    "CaptureSource",
    "Frame",
    "FrameSource",
    "Grabbed",
    "Grabs",
    "ImageFolderSource",
    "OpenCVSource",
    "Picamera2Source",
    "SourceError",
    "SourceUnavailable",
    "UnreadableFrame",
    "as_bgr",
    "check_decodable",
    "decode_image",
    "open_source",
    "safe_url",
]
