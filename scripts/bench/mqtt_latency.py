"""MQTT to a broker far away: messages/s, drops and the exit, through a delay proxy.

    python scripts/bench/mqtt_latency.py [--rtt 0,50,200] [--inflight 1,32]

A real Mosquitto broker, reached through a TCP proxy that delays every byte by
half the round trip each way, and the real publisher. For each round trip and
window (messages in flight at once; 1 is how it published before):

- **burst**: 900 count events written at once; messages the broker
  acknowledged per second until all are (or ``--measure`` seconds passed);
- **scene**: a busy scene (40 lines, 10 zones, 451 crossings and their zone and
  count changes: ~1,800 events) written over ``--scene`` seconds (a minute of a
  busy day, ten times as fast); events dropped, and how long after the last one
  the broker had them all;
- **exit**: how long the clean exit took, and what a subscriber connecting
  after it reads: ``offline`` and no count, whatever the backlog was.

Needs mosquitto (Debian's package).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.events import CountChanged
from device.outputs.mqtt.publisher import MqttPublisher
from device.outputs.mqtt.settings import parse_mqtt
from tests.ops.support import LINES, ZONES, Broker, DelayProxy, Scene, Subscriber, mosquitto_path


def publisher(url: str, device_id: str, window: int, **options: Any) -> MqttPublisher:
    said: list[str] = []
    return MqttPublisher(
        parse_mqtt(url),
        device_id=device_id,
        model="local",
        max_inflight=window,
        backoff_s=(0.05, 0.3),
        announce=said.append,
        **options,
    )


async def until_delivered(pub: MqttPublisher, limit_s: float) -> float:
    """Seconds until the broker acknowledged all that is queued (at most ``limit_s``)."""
    start = time.monotonic()
    with anyio.move_on_after(limit_s):
        # A benchmark samples the queue every 10 ms: there is nothing to wait on.
        while pub.queued:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return time.monotonic() - start


async def burst(port: int, rtt_ms: int, window: int, measure_s: float) -> float:
    with DelayProxy(port, rtt_ms / 2000) as proxy:
        pub = publisher(proxy.url, f"burst-{rtt_ms}-{window}", window)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pub.serve)
            await pub.wait_connected()
            await until_delivered(pub, 10)  # the connect's own messages
            before = pub.published
            start = time.monotonic()
            for n in range(900):
                pub.write(CountChanged(count=n % 9, previous=(n - 1) % 9))
            await until_delivered(pub, measure_s)
            rate = (pub.published - before) / (time.monotonic() - start)
            tg.cancel_scope.cancel()
    return rate


async def scene_run(port: int, rtt_ms: int, window: int, seconds: float) -> dict[str, Any]:
    scene = Scene.busy()
    device = f"scene-{rtt_ms}-{window}"
    with DelayProxy(port, rtt_ms / 2000) as proxy:
        pub = publisher(proxy.url, device, window, lines=LINES, zones=ZONES)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pub.serve)
            await pub.wait_connected()
            per_batch = max(1, len(scene.events) // int(seconds / 0.02))
            for start in range(0, len(scene.events), per_batch):
                for event in scene.events[start : start + per_batch]:
                    pub.write(event)
                await anyio.sleep(0.02)
            lag = await until_delivered(pub, 30)
            backlog = pub.backlog.events
            stopping = time.monotonic()
            tg.cancel_scope.cancel()
        exit_s = time.monotonic() - stopping
    late = Subscriber(port, [f"lookout/{device}/state", f"lookout/{device}/count"])
    try:
        late.wait_for(
            lambda ms: any(m.topic.endswith("/state") for m in ms), "the retained state", 10
        )
        held = {m.topic.rsplit("/", 1)[1]: m.payload for m in late.messages if m.retain}
    finally:
        late.close()
    return {
        "events": pub.stats.events,
        "dropped": pub.stats.dropped - pub.stats.lost_at_exit,
        "lag_s": lag,
        "backlog": backlog,
        "lost_at_exit": pub.stats.lost_at_exit,
        "exit_s": exit_s,
        "after": f"{held.get('state', b'?').decode()}, "
        + ("a count" if "count" in held else "no count"),
    }


async def main_async(args: argparse.Namespace) -> int:
    executable = mosquitto_path()
    if executable is None:
        print("mosquitto not found: apt-get install mosquitto")
        return 2
    rtts = [int(v) for v in args.rtt.split(",")]
    windows = [int(v) for v in args.inflight.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(executable, Path(tmp))
        broker.start()
        try:
            print(
                f"{'rtt ms':>6} {'in flight':>9} {'burst msg/s':>11} {'events':>6} "
                f"{'dropped':>7} {'lag s':>6} {'exit s':>6} {'lost at exit':>12}  after the exit"
            )
            for rtt in rtts:
                for window in windows:
                    rate = await burst(broker.port, rtt, window, args.measure)
                    row = await scene_run(broker.port, rtt, window, args.scene)
                    print(
                        f"{rtt:>6} {window:>9} {rate:>11.0f} {row['events']:>6} "
                        f"{row['dropped']:>7} {row['lag_s']:>6.1f} {row['exit_s']:>6.2f} "
                        f"{row['lost_at_exit']:>12}  {row['after']}",
                        flush=True,
                    )
        finally:
            broker.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt", default="0,50,200", help="round trips to try, ms")
    parser.add_argument("--inflight", default="1,64", help="windows to try (1: as before)")
    parser.add_argument("--measure", type=float, default=10.0, help="burst: at most this long")
    parser.add_argument("--scene", type=float, default=6.0, help="seconds to play the scene in")
    args = parser.parse_args()
    print(describe_cpu())
    return anyio.run(main_async, args)


if __name__ == "__main__":
    sys.exit(main())
