"""A warning logged during a run reads as a console line, once, not as a log line.

The real command (a page open to the network: its warning), and the console with the
stderr handler's filter for what a run cannot stage on cue: a warning from another
thread while the loop runs, and the log it stays in when -v asked for one.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from pathlib import Path

import anyio
import pytest

from device.outputs.console import ConsoleSink
from device.outputs.console_log import ConsoleLogs
from tests.cli import lookout
from tests.datafiles import data_file
from tests.ops.support import free_port

TIMED = re.compile(r"^\[\s*\d+\.\ds\] ")


@pytest.mark.slow
def test_a_warning_during_a_run_is_one_timed_console_line_and_not_on_stderr(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty.toml").write_text("")
    done = lookout(
        "run", "--config", str(tmp_path / "empty.toml"), "--source", str(data_file("vtest.avi")),
        "--model", "local", "--pace", "fast", "--duration", "1",
        "--http", f"0.0.0.0:{free_port()}", "--http-insecure",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "beyond this machine" in line]
    assert len(said) == 1, done.stdout
    assert TIMED.match(said[0]) and "] warning: status server listens on 0.0.0.0:" in said[0]
    assert done.stderr == ""  # no log line in another format, and not said twice


class Logged:
    """A logger whose handler is the CLI's stderr handler (to a string), with the filter."""

    def __init__(self, name: str, *, verbose: bool = False) -> None:
        self.stderr = io.StringIO()
        self.handler = logging.StreamHandler(self.stderr)
        self.handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.filter = ConsoleLogs(keep_on_stderr=verbose)
        self.handler.addFilter(self.filter)
        self.logger = logging.getLogger(name)
        self.logger.addHandler(self.handler)
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)

    def remove(self) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.propagate = True
        self.logger.setLevel(logging.NOTSET)


@pytest.mark.anyio
async def test_a_warning_from_another_thread_is_said_on_the_loop_as_a_console_line() -> None:
    logged = Logged("lookout.mqtt.test")
    try:
        out = io.StringIO()
        console = ConsoleSink(out)
        said = anyio.Event()

        def say(line: str) -> None:
            assert threading.current_thread() is threading.main_thread()  # the loop's
            console.say(line, 12.3)
            said.set()

        logged.filter.attach(say)
        logged.filter.write(object())  # the bus's first event: the loop is known from here

        def mqtt_thread() -> None:
            logged.logger.warning("MQTT: not publishing %s: %s", "line", "bad name")

        thread = threading.Thread(target=mqtt_thread)
        thread.start()
        with anyio.fail_after(5):
            await said.wait()
        thread.join()
        assert out.getvalue() == "[   12.3s] warning: MQTT: not publishing line: bad name\n"
        assert logged.stderr.getvalue() == ""
        # Info is a log's, asked for with -v: it stays there, and is not the console's.
        logged.logger.info("MQTT connected to broker")
        assert "INFO lookout.mqtt.test: MQTT connected" in logged.stderr.getvalue()
        assert "connected" not in out.getvalue()
        # Once the console closed (the bus's end), the log says everything again.
        logged.filter.close()
        logged.logger.warning("MQTT: the broker did not acknowledge the goodbye in time")
        assert "WARNING lookout.mqtt.test: MQTT: the broker" in logged.stderr.getvalue()
        assert "goodbye" not in out.getvalue()
    finally:
        logged.remove()


def test_with_a_log_asked_for_a_warning_is_in_both_and_another_librarys_names_itself() -> None:
    logged = Logged("somelibrary.client", verbose=True)
    try:
        out = io.StringIO()
        console = ConsoleSink(out)
        logged.filter.attach(lambda line: console.say(line, 1.0))
        try:
            raise ConnectionResetError("peer went away")
        except ConnectionResetError:
            logged.logger.warning("connection closed", exc_info=True)
        assert out.getvalue() == (
            "[    1.0s] warning: somelibrary.client: connection closed "
            "(ConnectionResetError: peer went away)\n"
        )
        assert "WARNING somelibrary.client: connection closed" in logged.stderr.getvalue()
        assert "Traceback" in logged.stderr.getvalue()  # the whole record is the log's
    finally:
        logged.remove()
