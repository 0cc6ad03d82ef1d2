"""What ``--source`` names is looked at before it is opened or read.

A named pipe given as the source once hung the start for ever (FFmpeg waits for a
writer), an image of a folder swapped for one hung the folder, a huge file in a
folder was read whole before its header said anything, and a video whose frames are
over ``--max-image-pixels`` was decoded frame by frame only to be refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from device.sources import ImageFolderSource, UnreadableFrame
from tests.cli import lookout_in_process
from tests.datafiles import data_file
from tests.fifos import within


@pytest.mark.parametrize("command", ["run", "count"])
def test_a_named_pipe_as_the_source_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "clip.mp4"
    os.mkfifo(fifo)
    (tmp_path / "empty.toml").write_text("")
    args = ["--source", str(fifo), "--no-http", "--config", str(tmp_path / "empty.toml")]
    result = within(10, fifo, lambda: lookout_in_process(
        *(["run", "--model", "local", *args] if command == "run" else ["count", str(fifo)])
    ))  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == f"lookout: {fifo}: a named pipe, not a video file, an image folder or a camera"


def test_a_video_whose_frames_are_over_the_pixel_limit_is_refused_before_decoding(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty.toml").write_text("")
    video = data_file("vtest.avi")
    result = lookout_in_process(
        "run", "--model", "local", "--no-http", "--config", str(tmp_path / "empty.toml"),
        "--source", str(video), "--max-image-pixels", "100000",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"lookout: {video}: its frames are 768x576, 0.4 megapixels, over the limit of 0.1 "
        "(--max-image-pixels)"
    )


def test_a_folder_image_swapped_for_a_pipe_or_too_big_is_skipped_and_said(
    tmp_path: Path,
) -> None:
    ok, png = cv2.imencode(".png", np.full((10, 10, 3), 90, np.uint8))
    assert ok
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.png").write_bytes(png.tobytes())
    folder = ImageFolderSource(tmp_path)
    folder.open()
    (tmp_path / "b.png").unlink()
    os.mkfifo(tmp_path / "b.png")
    # A small image's header, then 300 MB (sparse: nothing is written to the disk).
    os.truncate(tmp_path / "c.png", 300_000_000)

    def read_all() -> list[str]:
        said = []
        for _ in range(4):
            try:
                frame = folder.read()
                said.append("ok" if frame is not None else "end")
            except UnreadableFrame as exc:
                said.append(str(exc))
        return said

    said = within(10, tmp_path / "b.png", read_all)
    assert said == [
        "ok",
        f"cannot read image {tmp_path / 'b.png'}: a named pipe, not a regular file",
        f"cannot read image {tmp_path / 'c.png'}: 300 MB, over the limit of 256 MB",
        "ok",
    ]
