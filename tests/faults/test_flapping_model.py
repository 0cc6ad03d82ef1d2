"""A model that keeps dropping the connection: back-off, and a handful of lines, not a flood.

Reconnecting after a GoAway is right; reconnecting at once after a connection that did not
last (a GoAway straight after every setup) is a loop: such a connection counts as a failed
attempt, so the next waits longer, and a run of failures is said once, then at the 10th,
100th... with the count, and its end once. The real SDK against the fake Live server over
real (bounded) time, and the scripted model over an hour of virtual time.
"""

from __future__ import annotations

import anyio
import pytest

from live.config import ReconnectPolicy, SessionConfig
from live.model import LiveSetup, ModelGoAway
from live.testing import ScriptedConnection, ScriptedModel
from live.util.backoff import FailureRun
from tests.fakelive import FakeLiveServer
from tests.faults.live_runs import ping, said, session_on
from tests.live.harness import harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------------------------
# A model that says GoAway right after every setup: back-off, and one line, not one per try


async def test_go_away_after_every_setup_backs_off_over_real_time(srv: FakeLiveServer) -> None:
    srv.after_setup = [{"goAway": {"timeLeft": "0s"}}]
    policy = ReconnectPolicy(initial_backoff_s=0.1, max_backoff_s=0.4, stable_after_s=0.5)
    async with session_on(srv, policy) as run:
        await srv.wait_connection(1)
        started = anyio.current_time()
        # The window is the measurement: back-off allows 0, 0.1, 0.3, 0.7, 1.1, 1.5, 1.9 s.
        await anyio.sleep(2.0)
        window = anyio.current_time() - started
        flaps = len(srv.connections)
        states = [e.state for e in said(run.log)]
        # Now the model stays: its return is said once, after it proved it lasts.
        srv.after_setup = []
        back = await run.log.wait(
            lambda _: [e for e in said(run.log, "connected")[1:] if "after" in e.reason]
        )
    # Before: a reconnect per round trip (704 in 40 s against a real process).
    assert 3 <= flaps <= 2 + window / 0.25, (flaps, window)
    # The first failure said in full; the retries not at all.
    assert states == ["connecting", "connected", "go_away", "disconnected"], states
    assert "GoAway" in said(run.log, "disconnected")[0].reason
    assert "failed" in back[0].reason and run.session.failure is None


class FlappingModel(ScriptedModel):
    """Accepts every setup and says GoAway at once (while ``flapping``)."""

    flapping: bool = True

    async def connect(self, setup: LiveSetup) -> ScriptedConnection:
        conn = await super().connect(setup)
        if self.flapping:
            conn.inject(ModelGoAway(0.0))
        return conn


async def test_an_hour_of_a_flapping_model_is_a_handful_of_lines() -> None:
    model = FlappingModel()
    async with harness([FunctionTool(ping)], model=model) as h:
        with anyio.fail_after(60):  # real seconds: the old loop never let virtual time move
            await h.clock.run_for(3600)
            tries = len(model.connections)
            during = said(h.log)
            model.flapping = False
            # The next try (at most max_backoff_s away), and long enough for it to last.
            policy = ReconnectPolicy()
            await h.clock.run_for(policy.max_backoff_s + policy.stable_after_s)
            recovered = said(h.log)[len(during) :]
            # A GoAway on a connection that lasted is answered at once, without back-off.
            before = len(model.connections)
            model.go_away(5.0)
            await h.model.wait_for(lambda: len(model.connections) == before + 1)
        assert (await h.session.call_tool("ping", {"text": "device"})).ok
    policy = ReconnectPolicy()
    # Back-off up to its cap, then a try every max_backoff_s: not a try per round trip.
    assert 3600 / policy.max_backoff_s <= tries <= 3600 / policy.max_backoff_s + 10
    states = [e.state for e in during]
    assert states[:4] == ["connecting", "connected", "go_away", "disconnected"]
    # Then once at 10 and once at 100 failures in a row, with the count: not 120 times.
    repeats = during[4:]
    assert [e.state for e in repeats] == ["disconnected", "disconnected"]
    assert "10 failures in a row" in repeats[0].reason
    assert "100 failures in a row" in repeats[1].reason
    assert all(e.retry_in_s == policy.max_backoff_s for e in repeats[1:])
    # Its return: one line, with how many tries it took.
    assert [e.state for e in recovered] == ["connected"]
    assert f"after {tries} failed" in recovered[0].reason


async def test_an_hour_of_an_unreachable_model_is_a_handful_of_lines() -> None:
    model = ScriptedModel(refuse_connects=set(range(10_000)))
    async with harness([FunctionTool(ping)], model=model) as h:
        with anyio.fail_after(60):
            await h.clock.run_for(3600)
        assert (await h.session.call_tool("ping", {"text": "device"})).ok
    unreachable = said(h.log, "unreachable")
    assert [e.reason.partition(" (")[0] for e in unreachable] == ["connection refused"] * 3
    assert "10 failures in a row" in unreachable[1].reason
    assert "100 failures in a row" in unreachable[2].reason
    states = [e.state for e in said(h.log)]
    assert states == ["connecting", "unreachable", "unreachable", "unreachable", "closed"]
    closed = said(h.log, "closed")[0]
    assert "failures in a row over 1.0 h" in closed.reason, closed.reason
    assert len(model.setups) > 100


async def test_a_required_model_that_keeps_flapping_is_given_up_on() -> None:
    model = FlappingModel()
    config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=5))
    async with harness([], config, model=model) as h:
        with anyio.fail_after(30):
            await h.clock.run_for(120)
            await h.session.wait_finished()
    assert h.session.failure is not None and "keeps dropping" in h.session.failure
    assert len(model.connections) == 5


async def test_a_lost_connection_then_an_unreachable_model_is_said_once_each() -> None:
    model = ScriptedModel(refuse_connects=set(range(1, 31)))
    async with harness([FunctionTool(ping)], model=model) as h:
        await h.lasted()
        model.disconnect(code=1011, reason="internal error")
        with anyio.fail_after(30):
            await h.clock.run_for(900)
        assert h.session.model_connected
    states = [(e.state, e.reason) for e in said(h.log)]
    assert [state for state, _ in states] == [
        "connecting",
        "connected",
        "disconnected",  # a connection that had lasted: said, and retried at once
        "reconnecting",
        "unreachable",  # the first failure of the run, and the first of its kind
        "unreachable",  # the 10th, with the count
        "connected",  # the end of the run, with how long it took
        "closed",
    ]
    assert "10 failures in a row" in states[5][1]
    assert "after 30 failed attempts" in states[6][1]


def test_a_run_of_failures_is_said_at_its_first_each_kind_and_each_power_of_ten() -> None:
    now = [0.0]
    run = FailureRun(lambda: now[0])
    said = []
    for n in range(1, 1201):
        now[0] += 30
        run.fail()
        kind = "unreachable" if n % 7 else "refused"
        if run.say(kind):
            said.append((n, kind, run.counted("no answer")))
    assert [(n, kind) for n, kind, _ in said] == [
        (1, "unreachable"),
        (7, "refused"),  # the first of its kind
        (10, "unreachable"),
        (100, "unreachable"),
        (1000, "unreachable"),
    ]
    assert said[0][2] == "no answer"
    assert said[-1][2] == "no answer (1000 failures in a row over 8.3 h)"
    assert run.summary() == "after 1200 failed attempts in a row over 10.0 h"
    run.reset()
    assert run.summary() == "" and run.failures == 0
    assert run.fail() == 1 and run.say("refused")  # a new run says its first again
