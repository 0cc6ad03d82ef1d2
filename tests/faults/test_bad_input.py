"""Property-based bad input: tool arguments, JPEG bytes, config files.

Each must end in a clear, one-line error (or a valid result), never a crash.
"""

from __future__ import annotations

import string
import tomllib
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from device.config import ConfigError, build
from device.sources import decode_image
from live.stop_streaming import StopStreamingTool
from live.tool import ToolArgumentError
from tools.count_people import CountPeople, check_count_args
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.slow

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=2000),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=10), children, max_size=6)
    ),
    max_leaves=20,
)
argument_names = st.sampled_from(["min_change", "region", "function_name", "call_id"]) | st.text(
    min_size=0, max_size=300
)


def count_tool() -> FunctionTool:
    return FunctionTool(CountPeople(), name="count_people", check=check_count_args)


async def _noop(function_name: str | None, call_id: str | None) -> dict[str, Any]:
    return {}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(argument_names, json_values, max_size=5))
def test_tool_arguments_from_the_model_are_accepted_or_refused_clearly(
    args: dict[str, Any],
) -> None:
    for tool in (count_tool(), StopStreamingTool(_noop)):
        try:
            checked = tool.validate(args)
        except ToolArgumentError as exc:
            message = str(exc)
            assert message and "\n" not in message
            assert message.startswith(("count_people:", "stop_streaming:"))
            assert len(message) < 600  # a huge argument must not be echoed back whole
        else:
            assert set(checked) <= {"min_change", "region", "function_name", "call_id"}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_never_crash_the_image_decoder(data: bytes) -> None:
    image = decode_image(data)
    assert image is None or (image.ndim == 3 and image.dtype == np.uint8)


@pytest.fixture(scope="module")
def real_jpeg() -> bytes:
    rng = np.random.default_rng(7)
    image = cv2.GaussianBlur(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8), (9, 9), 0)
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=10_000),
    flips=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_truncated_or_damaged_jpegs_are_skipped_or_decoded(
    real_jpeg: bytes, cut: int, flips: list[int]
) -> None:
    data = bytearray(real_jpeg[: cut % (len(real_jpeg) + 1)])
    for position in flips:
        if data:
            data[position % len(data)] ^= 0xFF
    image = decode_image(bytes(data))
    assert image is None or image.shape[2] == 3


toml_keys = st.sampled_from(
    ["fps", "pace", "source", "loop", "threshold", "max_side", "model", "events", "duration"]
) | st.text(alphabet=string.ascii_letters + "_-", min_size=1, max_size=20)
toml_values = (
    st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(alphabet=string.printable.replace('"', "").replace("\\", ""), max_size=30)
    | st.lists(st.integers(0, 9), max_size=3)
)


def to_toml(values: dict[str, Any]) -> str:
    lines = []
    for key, value in values.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = '"' + value.replace("\n", " ").replace("\r", " ").replace("\t", " ") + '"'
        elif isinstance(value, list):
            text = "[" + ", ".join(str(v) for v in value) + "]"
        else:
            text = repr(value)
        lines.append(f'"{key}" = {text}')
    return "\n".join(lines) + "\n"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(toml_keys, toml_values, max_size=5))
def test_config_files_are_loaded_or_refused_in_one_line(
    tmp_path: Path, values: dict[str, Any]
) -> None:
    path = tmp_path / "lookout.toml"
    text = to_toml(values)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # the generator made invalid TOML; that path is tested elsewhere
    path.write_text(text)
    try:
        config = build({}, config_path=path, environ={}, system_config=Path("/nonexistent"))
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert config.model.model_fps > 0 and config.source.pace in {"realtime", "fast"}
