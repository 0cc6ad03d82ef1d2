"""Soak: the real `lookout run` for a long time under viewers, camera and broker outages.

    python scripts/bench/soak.py [--minutes 30] [--viewers 50] [--camera-outage-every 300]

The device reads a network camera (MJPEG over HTTP serving the sample video's
frames, taken off the network for ``--outage`` seconds every
``--camera-outage-every`` seconds), publishes to a real Mosquitto broker
(stopped once, for 30 s, half-way), and serves its status page to
``--viewers`` clients that connect, watch for 1-10 s (SSE, MJPEG, state,
health) and leave, again and again. Every ``--every`` seconds it samples the
process's RSS, open descriptors, threads and open HTTP connections. At the end:
the events made (the app's own count), the JSON-lines file, the SQLite log and
the count events MQTT delivered must agree. Prints a table; exits 1 when an
event was lost or resources grew.

Needs mosquitto (Debian's package) for the broker part; without it the soak
runs without MQTT and says so.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from tests.mjpeg_camera import MjpegCamera, vtest_jpegs
from tests.ops.support import Broker, Subscriber, free_port, mosquitto_path

ROUTES = ("/events", "/stream.mjpg", "/api/state", "/healthz", "/")


def proc_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def sample(pid: int, port: int) -> dict[str, float]:
    status = proc_status(pid)
    row = {
        "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
        "fds": float(len(os.listdir(f"/proc/{pid}/fd"))),
        "threads": float(status["Threads"]),
    }
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        for name, key in (("lookout_http_connections", "http"),
                          ("lookout_count_changes_total", "changes"),
                          ("lookout_http_refused_total", "refused")):  # fmt: skip
            found = re.search(rf'^{name}(?:{{camera="[^"]*"}})? ([0-9.e+]+)$', text, re.M)
            row[key] = float(found.group(1)) if found else float("nan")
    except OSError:
        row.update(http=float("nan"), changes=float("nan"), refused=float("nan"))
    return row


class Viewers:
    """Clients that come, watch a while and go, until stopped."""

    def __init__(self, port: int, n: int, seed: int = 7) -> None:
        self.port = port
        self.n = n
        self.stop = threading.Event()
        self.visits = 0
        self.errors = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            with self._lock:
                route = self._rng.choice(ROUTES)
                stay = self._rng.uniform(1, 10)
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", route)
                response = conn.getresponse()
                deadline = time.monotonic() + stay
                while time.monotonic() < deadline and not self.stop.is_set():
                    if not response.read(4096):
                        break
                conn.close()
                with self._lock:
                    self.visits += 1
            except (OSError, http.client.HTTPException):
                with self._lock:
                    self.errors += 1
                self.stop.wait(1)

    def join(self) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(15)


def db_events(path: Path) -> list[tuple[str, float]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, t FROM events ORDER BY rowid").fetchall()
    return [(str(kind), float(t)) for kind, t in rows]


def jsonl_events(path: Path) -> list[tuple[str, float]]:
    out = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        out.append((str(data["type"]), float(data["t"])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--camera-outage-every", type=float, default=300.0)
    parser.add_argument("--outage", type=float, default=20.0, help="seconds each camera outage")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    args = parser.parse_args()
    print(describe_cpu())
    total_s = args.minutes * 60
    work = Path(tempfile.mkdtemp(prefix="lookout-soak-"))
    camera = MjpegCamera(vtest_jpegs(300)).start()
    broker: Broker | None = None
    executable = mosquitto_path()
    if executable is not None:
        (work / "broker").mkdir()
        broker = Broker(executable, work / "broker")
        broker.start()
    else:
        print("mosquitto not found: soaking without MQTT (apt-get install mosquitto)")
    port = free_port()
    events, db = work / "events.jsonl", work / "events.sqlite"
    (work / "empty.toml").write_text("")
    command = [
        sys.executable, "-m", "device.cli", "run", "--config", str(work / "empty.toml"),
        "--source", camera.url, "--model", "local", "--http", f"127.0.0.1:{port}",
        "--events", str(events), "--db", str(db), "--stall-timeout", "2", "--verbose",
        "--device-id", "soak",
    ]  # fmt: skip
    watcher = None
    if broker is not None:
        command += ["--mqtt", broker.url]
        watcher = Subscriber(broker.port, ["lookout/soak/events"], client_id="soak-watch",
                             persistent=True)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}
    with (work / "stdout.txt").open("w") as out, (work / "stderr.txt").open("w") as err:
        proc = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[2], env=env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)  # fmt: skip
    started = time.monotonic()
    rows: list[tuple[float, dict[str, float]]] = []
    viewers = Viewers(port, args.viewers)
    done = threading.Event()
    outages = [0]

    def chaos() -> None:
        """The camera away every so often; the broker away once, half-way."""
        next_outage = started + args.camera_outage_every
        broker_done = broker is None
        while not done.is_set():
            now = time.monotonic()
            if now >= next_outage:
                camera.outage()
                done.wait(args.outage)
                camera.restore()
                outages[0] += 1
                next_outage += args.camera_outage_every
            if not broker_done and now - started >= total_s / 2:
                assert broker is not None
                broker.stop()
                done.wait(30)
                broker.start()
                broker_done = True
            done.wait(1)

    chaos_thread = threading.Thread(target=chaos, daemon=True)
    try:
        time.sleep(5)  # start-up: the model loads, the camera opens
        viewers.start()
        chaos_thread.start()
        while (now := time.monotonic()) - started < total_s:
            if proc.poll() is not None:
                print(f"lookout exited early with {proc.returncode}; see {work}")
                return 1
            rows.append((now - started, sample(proc.pid, port)))
            time.sleep(min(args.every, max(0.0, total_s - (time.monotonic() - started))))
        rows.append((time.monotonic() - started, sample(proc.pid, port)))
    finally:
        done.set()
        chaos_thread.join(60) if chaos_thread.is_alive() else None
        viewers.join()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        camera.stop()
    stderr = (work / "stderr.txt").read_text()
    made_match = re.search(r"(\d+) events published in this run", stderr)
    made = int(made_match.group(1)) if made_match else -1
    from_jsonl = jsonl_events(events)
    from_db = db_events(db)
    mqtt_counts = None
    if watcher is not None:
        time.sleep(2)  # the last QoS-1 deliveries in flight
        seen = {json.loads(m.payload)["t"] for m in watcher.messages if m.payload}
        counts = [t for kind, t in from_jsonl if kind == "count"]
        mqtt_counts = (len([t for t in counts if t in seen]), len(counts))
        watcher.close()
    if broker is not None:
        broker.stop()

    print(f"soak: {args.minutes:g} min, {args.viewers} viewers ({viewers.visits:,} visits, "
          f"{viewers.errors:,} ended by a time-out or refused), {outages[0]} camera outages of "
          f"{args.outage:g} s, broker outage: {'yes' if broker is not None else 'no'}")  # fmt: skip
    print(f"{'t min':>6}{'RSS MB':>9}{'fds':>6}{'threads':>9}{'http conns':>12}"
          f"{'refused':>9}{'changes':>9}")  # fmt: skip
    for t, row in rows:
        print(f"{t / 60:>6.1f}{row['rss_mb']:>9.1f}{row['fds']:>6.0f}{row['threads']:>9.0f}"
              f"{row['http']:>12.0f}{row['refused']:>9.0f}{row['changes']:>9.0f}")  # fmt: skip
    steady = rows[1:] if len(rows) > 2 else rows
    rss = [r["rss_mb"] for _, r in steady]
    # Descriptors beyond the viewers' own connections: what would leak.
    fds = [r["fds"] - (r["http"] if r["http"] == r["http"] else 0) for _, r in steady]
    print(f"RSS {rss[0]:.1f} -> {rss[-1]:.1f} MB (max {max(rss):.1f}); fds beyond HTTP "
          f"connections {fds[0]:.0f} -> {fds[-1]:.0f} (max {max(fds):.0f})")  # fmt: skip
    mqtt = (
        f"; MQTT delivered {mqtt_counts[0]:,} of {mqtt_counts[1]:,} count events"
        if (mqtt_counts)
        else ""
    )
    print(f"events made {made:,}; JSON lines {len(from_jsonl):,}; SQLite rows {len(from_db):,}"
          f"{mqtt}; exit code {proc.returncode}")  # fmt: skip
    ok = (
        proc.returncode == 0
        and made == len(from_jsonl) == len(from_db)
        and from_jsonl == from_db
        and (mqtt_counts is None or mqtt_counts[0] == mqtt_counts[1])
        and rss[-1] <= rss[0] * 1.25 + 10
        and fds[-1] <= fds[0] + 20
    )
    print("OK: nothing lost, resources flat" if ok else f"NOT OK: see {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
