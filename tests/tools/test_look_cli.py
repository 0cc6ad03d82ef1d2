"""`look` through `lookout run`: the real CLI process, the real detector on the sample video,
the real google-genai SDK, the TLS fake Live server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.audio.test_voice_run import connected, quit_and_finish, start
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer

pytestmark = pytest.mark.slow


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def test_a_look_shows_one_boxed_frame_then_answers_about_it(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    proc = start(server, tmp_path)
    connected(server)
    assert server.connection(0).declaration("look") is not None
    # Once the device counts (count_people's first emission with a number), the model looks.
    (count_id,) = server.send_tool_call({"name": "count_people", "args": {}})

    def counting() -> bool:
        responses = server.server.connection(0).function_responses()
        return any(
            r.id == count_id and isinstance(r.response, dict) and r.response.get("people")
            for r in responses
        )

    server.wait_for(counting, timeout=30)
    (call_id,) = server.send_tool_call({"name": "look", "args": {"question": "who is there?"}})
    answer = server.wait_function_response(call_id, timeout=30)
    quit_and_finish(proc)
    conn = server.connection(0)
    images = conn.frames()
    assert len(images) == 1 and images[0].t <= answer.t  # the picture, then its answer
    picture = cv2.imdecode(np.frombuffer(images[0].data or b"", np.uint8), cv2.IMREAD_COLOR)
    assert picture is not None and max(picture.shape[:2]) <= 768
    response = answer.response
    assert isinstance(response, dict) and response["question"] == "who is there?"
    assert response["people"] == len(response["boxes"]) >= 1
    assert "sent" in response["image"]


def test_under_privacy_look_is_not_offered_and_no_image_leaves(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    proc = start(server, tmp_path, "--privacy")
    connected(server)
    assert server.connection(0).declaration("look") is None
    (call_id,) = server.send_tool_call({"name": "look", "args": {}})
    answer = server.wait_function_response(call_id, timeout=30)
    quit_and_finish(proc)
    assert server.connection(0).frames() == []
    assert isinstance(answer.response, dict) and "Unknown tool" in str(answer.response)
