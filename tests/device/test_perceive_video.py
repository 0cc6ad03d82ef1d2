"""``perceive_video``: a recording's frames reach perception in order, with their place in
the file, and a file that is not a video is said, not perceived as nothing."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from device.app.count import perceive_video
from device.vision.frame import Frame
from device.vision.perception import Perception
from tests.datafiles import data_file


class Recorder:
    """Stands in for ``Perception``: keeps what it is given."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    async def process(self, frame: Frame, *, force: bool = False) -> None:
        self.frames.append(frame)


def test_every_nth_frame_up_to_the_limit_with_its_media_time() -> None:
    seen = Recorder()
    perceive_video(cast(Perception, seen), data_file("vtest.avi"), every=5, limit=21)
    assert [f.index for f in seen.frames] == [0, 5, 10, 15, 20]
    assert [f.t_media for f in seen.frames] == [0.0, 0.5, 1.0, 1.5, 2.0]  # a 10 fps file
    assert {Path(f.source).name for f in seen.frames} == {"vtest.avi"}
    assert seen.frames[0].image.shape == (576, 768, 3)


def test_a_file_that_is_not_a_video_is_an_error(tmp_path: Path) -> None:
    text = tmp_path / "notes.avi"
    text.write_text("not a video")
    with pytest.raises(ValueError, match=r"notes\.avi"):
        perceive_video(cast(Perception, Recorder()), text)
