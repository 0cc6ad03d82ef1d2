"""live/link/budget.py: the token meter (rolling hour, each turn once) and the cap's steps."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from google.genai import types

from live.config import BudgetLimits
from live.events import BudgetState, Event
from live.link.budget import BudgetLevel, SpendingCap, TokenMeter
from live.link.outbox import OutEmission
from live.tool import coalesce_updates
from live.util.clock import FakeClock

pytestmark = pytest.mark.anyio

WHEN_IDLE = types.FunctionResponseScheduling.WHEN_IDLE


def test_a_turn_counts_once_at_its_largest_report() -> None:
    meter = TokenMeter()
    assert meter.count(100, now=0.0) == 100
    assert meter.count(100, now=0.5) == 0  # the same report again
    assert meter.count(250, now=1.0) == 150  # the turn so far: only what it adds
    assert meter.count(200, now=1.5) == 0  # smaller than the turn's largest
    assert meter.session == 250
    meter.end_turn()
    assert meter.count(40, now=2.0) == 40  # a new turn
    assert meter.session == 290
    assert meter.in_window(2.0) == 290


def test_the_rolling_hour_lets_old_tokens_go() -> None:
    meter = TokenMeter(window_s=3600.0)
    meter.count(1000, now=0.0)
    meter.end_turn()
    meter.count(500, now=1800.0)
    assert meter.in_window(3599.0) == 1500
    assert meter.next_expiry() == 3600.0
    assert meter.in_window(3600.0) == 500  # the first turn left the window
    assert meter.next_expiry() == 5400.0
    assert meter.in_window(5400.0) == 0
    assert meter.next_expiry() is None
    assert meter.session == 1500  # the session's count never goes down


def test_reports_within_a_second_share_an_entry_that_leaves_at_the_later_time() -> None:
    meter = TokenMeter(window_s=10.0)
    meter.count(10, now=0.0)
    meter.count(30, now=0.6)
    assert meter.next_expiry() == pytest.approx(10.6)
    assert meter.in_window(10.59) == 30


def test_limits_are_checked() -> None:
    assert not BudgetLimits().enabled
    assert BudgetLimits(per_session=5).enabled
    with pytest.raises(ValueError, match="per_hour"):
        BudgetLimits(per_hour=0)
    with pytest.raises(ValueError, match="saving_at"):
        BudgetLimits(per_hour=5, saving_at=0)


class Cap:
    """A cap on a FakeClock, recording what it says, tells and releases."""

    def __init__(self, **limits: Any) -> None:
        self.clock = FakeClock()
        self.events: list[Event] = []
        self.notes: list[str] = []
        self.released: list[OutEmission] = []
        self.cap = SpendingCap(
            BudgetLimits(**limits),
            self.clock,
            emit=self.events.append,
            note=self.notes.append,
            release=self.released.append,
            coalesce=lambda _name, older, newer: coalesce_updates(older, newer),
        )

    def states(self) -> list[str]:
        return [e.state for e in self.events if isinstance(e, BudgetState)]

    def emit(self, people: int, *, call_id: str = "c1", final: bool = False) -> bool:
        emission = OutEmission(call_id, "count_people", {"people": people}, final, WHEN_IDLE)
        return self.cap.hold(emission)

    def level(self) -> BudgetLevel:
        return self.cap.level

    def turn(self, tokens: int) -> None:
        self.cap.on_usage(tokens)
        self.cap.end_turn()


def test_at_80_percent_frames_and_looks_stop_and_the_model_is_told_once() -> None:
    c = Cap(per_hour=1000)
    c.turn(700)
    assert c.level() is BudgetLevel.NORMAL and c.cap.frames_allowed()
    assert c.cap.look_refusal() is None and c.notes == []
    c.turn(100)
    assert c.level() is BudgetLevel.SAVING
    assert not c.cap.frames_allowed()
    assert c.cap.look_refusal() == "the token budget is at 80 % of its hour limit: no looks"
    c.turn(50)
    assert len(c.notes) == 1 and "paused" in c.notes[0]
    assert c.states() == ["saving"]
    assert not c.emit(3)  # below the limit, emissions are not held


def test_at_the_limit_emissions_go_at_most_once_a_minute_the_newest_winning() -> None:
    c = Cap(per_session=1000)
    c.turn(1000)
    assert c.level() is BudgetLevel.CAPPED and c.states() == ["capped"]
    assert len(c.notes) == 1  # told once, when saving starts (here: capped at once)
    event = c.events[-1]
    assert isinstance(event, BudgetState)
    assert (event.limit, event.session_used, event.session_limit) == ("session", 1000, 1000)
    assert c.emit(1) and [e.payload["people"] for e in c.released] == [1]  # the first at once
    c.clock.advance(10)
    assert c.emit(2) and c.emit(3)
    assert len(c.released) == 1 and c.cap.thinned == 1  # held, merged
    assert c.cap._next_wake() == 60.0


async def test_the_held_emission_is_released_on_the_minute() -> None:
    c = Cap(per_session=1000)
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.cap.run)
        c.turn(1000)
        c.emit(1)
        await c.clock.run_for(5)
        c.emit(2)
        c.emit(3)
        await c.clock.run_for(54.9)
        assert [e.payload["people"] for e in c.released] == [1]
        await c.clock.run_for(0.2)
        assert [e.payload["people"] for e in c.released] == [1, 3]
        assert c.released[-1].payload["while_away"] == {"updates": 2}  # merged, newest wins
        # A stream's end is never held: what waited goes first, then the end (not held).
        c.emit(4)
        assert not c.emit(5, final=True)
        assert [e.payload["people"] for e in c.released] == [1, 3, 4]
        tg.cancel_scope.cancel()


async def test_the_rolling_hour_frees_room_and_that_is_said_once() -> None:
    c = Cap(per_hour=1000)
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.cap.run)
        c.turn(600)
        await c.clock.run_for(600)
        c.turn(500)
        assert c.level() is BudgetLevel.CAPPED and c.cap.limit == "hour"
        c.emit(1)
        await c.clock.run_for(30)
        c.emit(2)  # held
        # At 3600 s the first 600 tokens leave the hour: 500 left, below 80 %.
        await c.clock.run_for(3600 - c.clock.now() - 0.1)
        assert c.level() is BudgetLevel.CAPPED
        await c.clock.run_for(0.2)
        assert c.level() is BudgetLevel.NORMAL and c.cap.frames_allowed()
        assert c.states() == ["capped", "normal"]
        assert [e.payload["people"] for e in c.released] == [1, 2]  # the held one went
        assert len(c.notes) == 2 and "room again" in c.notes[1]
        await c.clock.run_for(7200)
        assert c.states() == ["capped", "normal"]  # said once
        tg.cancel_scope.cancel()


def test_the_session_limit_never_frees_room() -> None:
    c = Cap(per_session=100, per_hour=10_000)
    c.turn(100)
    c.clock.advance(7200)
    c.cap._update()
    assert c.level() is BudgetLevel.CAPPED and c.cap.limit == "session"
    assert c.cap.snapshot()["session"] == {"used": 100, "limit": 100}
    assert c.cap.snapshot()["hour"] == {"used": 0, "limit": 10_000}


def test_the_sessions_token_counts_take_each_turn_once_at_its_largest_report() -> None:
    """The end-of-run line and ``/metrics`` read these: repeated reports of one turn (each
    the turn so far) add only what is new; a new turn starts from nothing."""
    from live.model import ModelUsage
    from live.stats import SessionStats

    stats = SessionStats()
    first = ModelUsage(100, 0, 100, (("TEXT", 60), ("IMAGE", 40)))
    stats.add_usage(first)
    stats.add_usage(first)  # the same report again
    stats.add_usage(ModelUsage(100, 20, 120, (("TEXT", 60), ("IMAGE", 40))))  # the turn grew
    assert (stats.usage_prompt_tokens, stats.usage_response_tokens) == (100, 20)
    assert stats.usage_total_tokens == 120
    stats.end_turn()
    stats.add_usage(ModelUsage(30, 5, 35, (("TEXT", 30),)))
    assert (stats.usage_prompt_tokens, stats.usage_response_tokens) == (130, 25)
    assert stats.usage_total_tokens == 155
    assert stats.usage_prompt_by_modality == {"TEXT": 90, "IMAGE": 40}
