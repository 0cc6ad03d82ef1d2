"""What the MQTT client refuses at run time, should a setting slip past the start checks
(device/config/urls.py): said once, MQTT marked failing, the run goes on without it (it
was a 95-line ExceptionGroup and exit 1)."""

from __future__ import annotations

import anyio
import pytest

from device.events import CountChanged
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import MqttSettings
from tests.ops.support import Broker

pytestmark = pytest.mark.anyio


async def said_while_running(settings: MqttSettings) -> tuple[list[str], list[str]]:
    """What the publisher said, and its problems, once it has failed for a while."""
    said: list[str] = []
    pub = MqttPublisher(
        settings, device_id="cam", model="local", announce=said.append, backoff_s=(0.01, 0.05)
    )
    async with anyio.create_task_group() as tg:
        await tg.start(pub.run)
        with anyio.fail_after(10):
            while not pub.problems():  # noqa: ASYNC110 (polled: no event says it)
                await anyio.sleep(0.02)
        pub.write(CountChanged(t=1.0, count=1, previous=None, raw=1, t_media=1.0))
        await anyio.sleep(0.3)  # several more tries
        problems = pub.problems()
        tg.cancel_scope.cancel()
    return said, problems


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (MqttSettings("broker..lan"), "UnicodeError: encoding with 'idna' codec failed"),
        (MqttSettings("127.0.0.1", 0), "ValueError: Invalid port number"),
        (MqttSettings("127.0.0.1", 1, username="u\udcff"), "UnicodeEncodeError"),
    ],
)
async def test_a_client_that_refuses_its_settings_is_said_once_and_the_run_goes_on(
    settings: MqttSettings, reason: str
) -> None:
    said, problems = await said_while_running(settings)
    failed = [line for line in said if "the MQTT client failed" in line]
    assert len(failed) == 1 and reason in failed[0], said
    assert "\n" not in failed[0]
    assert any(reason in problem for problem in problems), problems  # /healthz: degraded


@pytest.mark.slow
async def test_a_user_name_longer_than_mqtt_carries_is_said_once(broker: Broker) -> None:
    """paho packs a user name's length into 16 bits: struct.error, when it writes CONNECT."""
    settings = MqttSettings("127.0.0.1", broker.port, username="u" * 65_536)
    said, _ = await said_while_running(settings)
    failed = [line for line in said if "the MQTT client failed" in line]
    assert len(failed) == 1 and "error" in failed[0], said
