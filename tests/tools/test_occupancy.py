"""The occupancy report's length, as the model is told it and as it is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from device.vision.percept import Percept
from live.tool import Tool, ToolArgumentError
from tools.occupancy import OccupancyTools


class NoFrames:
    name = "camera"

    async def newest(self) -> Percept:
        raise AssertionError("checking arguments must not read frames")

    def samples(self, fps: float, duration_s: float) -> AsyncIterator[Percept]:
        raise AssertionError("checking arguments must not read frames")


def report_tool() -> Tool:
    tools = OccupancyTools(NoFrames()).tools()
    (tool,) = [t for t in tools if t.name == "start_occupancy_report"]
    return tool


def test_the_model_is_told_the_longest_report() -> None:
    decl = report_tool().declaration()
    assert decl.parameters is not None and decl.parameters.properties is not None
    assert decl.parameters.properties["minutes"].maximum == 1440


@pytest.mark.parametrize("minutes", [0, -1, 1440.5, 5000])
def test_a_report_length_out_of_range_names_the_whole_range(minutes: float) -> None:
    with pytest.raises(ToolArgumentError) as info:
        report_tool().validate({"minutes": minutes})
    assert str(info.value) == (
        f"start_occupancy_report: minutes must be more than 0 and at most 1440, got {minutes}"
    )


def test_a_fraction_of_a_minute_is_a_report_length() -> None:
    assert report_tool().validate({"minutes": 0.5}) == {"minutes": 0.5}
