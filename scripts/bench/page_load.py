"""Readers of the status page against the count: N tight pollers per route, Lookout vs a decoy.

    python scripts/bench/page_load.py [--seconds 20] [--pollers 0,10,100,500]
        [--routes /api/state,/metrics,/events,/snapshot.jpg,/stream.mjpg] [--lookout-only]

Each run is the real ``lookout run`` replaying the sample video in real time
through the real detector with the lamp-post line (5 detections a second are
due) and its status page on, for ``--seconds`` of media. Beside it, N readers
in two other processes (``tests/pollers.py``) ask one route again as soon as
they are answered, never backing off. Each route and N is run twice: the readers
aimed at Lookout's own status server, and the same readers aimed at a decoy, a
plain aiohttp server in another process that answers the same bodies at once (so
the machine carries the same load of readers, but Lookout's event loop does not).
The goal (issue 33): with the readers on Lookout, at least 0.95x the detections
per second of the decoy run, and the same line totals as with no readers.

Columns: ``det/s`` detector runs per second of the run's wall time; ``x none``
against no readers; ``x decoy`` against the decoy run of the same route and N;
``totals`` the line's in/out (``same`` when equal to no readers'); ``ans/s``
answers the readers got per second (all statuses; a stream is one answer),
``MB/s`` the bytes of their bodies, ``refused`` the share of answers that were
429 or 503 (each with Retry-After); ``health`` the share of /healthz
probes (one each 0.5 s, on a fresh connection) that said 200.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.detection_cache import ENV as DETECTIONS_ENV
from tests.ops.support import free_port, health
from tests.pollers import Pollers, Tally

POST = "post=0.5599,0.7292,0.5599,0.2083"
START_S = 120.0


@dataclass
class Result:
    detections: int
    wall_s: float
    totals: tuple[int, int]
    tally: Tally
    load_s: float
    health_ok: int
    health_asked: int

    @property
    def det_per_s(self) -> float:
        return self.detections / self.wall_s if self.wall_s else 0.0


# ----------------------------------------------------------------------- the decoy


def decoy_main(port: int, bodies: Path) -> None:
    """A plain aiohttp server answering Lookout's bodies at once, per request, no pacing."""
    from aiohttp import web

    saved = json.loads(bodies.read_text())
    state = saved["state"].encode()
    metrics = saved["metrics"].encode()
    jpeg = bytes.fromhex(saved["jpeg"])

    async def answer_state(request: web.Request) -> web.Response:
        # Made per request, as Lookout made it before: parse and dump the same JSON.
        return web.Response(body=json.dumps(json.loads(state)).encode(),
                            content_type="application/json")  # fmt: skip

    async def answer_metrics(request: web.Request) -> web.Response:
        return web.Response(body=bytes(metrics), content_type="text/plain")

    async def answer_jpeg(request: web.Request) -> web.Response:
        return web.Response(body=jpeg, content_type="image/jpeg")

    async def answer_events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(b"event: state\ndata: " + state + b"\n\n")
                await asyncio.sleep(0.25)
        return response

    async def answer_mjpeg(request: web.Request) -> web.StreamResponse:
        boundary = "decoy-frame"
        response = web.StreamResponse(
            headers={"Content-Type": f"multipart/x-mixed-replace; boundary={boundary}"}
        )
        await response.prepare(request)
        part = f"--{boundary}\r\nContent-Type: image/jpeg\r\n\r\n".encode()
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(part + jpeg + b"\r\n")
                await asyncio.sleep(0.1)
        return response

    app = web.Application()
    app.router.add_get("/api/state", answer_state)
    app.router.add_get("/metrics", answer_metrics)
    app.router.add_get("/snapshot.jpg", answer_jpeg)
    app.router.add_get("/events", answer_events)
    app.router.add_get("/stream.mjpg", answer_mjpeg)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def save_bodies(port: int, path: Path) -> None:
    """What Lookout answers now on each route, for the decoy to answer the same."""
    found: dict[str, str] = {}
    for name, route in (("state", "/api/state"), ("metrics", "/metrics")):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10) as a:
            found[name] = a.read().decode()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/snapshot.jpg", timeout=10) as a:
        found["jpeg"] = a.read().hex()
    path.write_text(json.dumps(found))


# ------------------------------------------------------------------------ a run


def run_once(
    seconds: int, route: str, pollers: int, *, decoy: bool, bodies: Path, save: bool = False,
    root: Path = REPO_ROOT,
) -> Result:  # fmt: skip
    port = free_port()
    env = {k: v for k, v in offline_env().items() if k != DETECTIONS_ENV}
    proc = subprocess.Popen(
        [*LOOKOUT, "run", "--source", str(data_file("vtest.avi")), "--model", "local",
         "--line", POST, "--pace", "realtime", "--duration", str(seconds),
         "--http", f"127.0.0.1:{port}"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or ()), daemon=True)
    reader.start()
    decoy_proc: subprocess.Popen[bytes] | None = None
    target = port
    if decoy and pollers:
        target = free_port()
        decoy_proc = subprocess.Popen(
            [sys.executable, __file__, "--decoy", str(target), "--bodies", str(bodies)],
            stderr=subprocess.DEVNULL,
        )
    deadline = time.monotonic() + START_S
    while health(port) != 200 or (decoy_proc is not None and health(target) == 0):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("lookout did not start:\n" + "".join(out)[-3000:])
        time.sleep(0.1)
    if save:
        save_bodies(port, bodies)
    load = Pollers(target, route, pollers, processes=2).start() if pollers else None
    asked = ok = 0
    while proc.poll() is None:
        code = health(port)
        if proc.poll() is None and code:
            asked += 1
            ok += code == 200
        time.sleep(0.5)
    tally = load.stop() if load is not None else Tally()
    load_s = (load.ended_at - load.started_at) if load is not None else 0.0
    if decoy_proc is not None:
        decoy_proc.terminate()
        decoy_proc.wait(10)
    reader.join(10)
    said = "".join(out)
    ran = re.search(r"in ([0-9.]+) s; the detector ran on (\d+)", said)
    totals = re.search(r"totals: line post (\d+) in, (\d+) out", said)
    if proc.returncode != 0 or ran is None or totals is None:
        raise SystemExit("lookout did not end well:\n" + said[-3000:])
    return Result(
        detections=int(ran.group(2)),
        wall_s=float(ran.group(1)),
        totals=(int(totals.group(1)), int(totals.group(2))),
        tally=tally,
        load_s=load_s,
        health_ok=ok,
        health_asked=asked,
    )


def row(route: str, n: int, target: str, r: Result, none: Result, decoy: Result | None) -> str:
    answers = r.tally.answers
    refused = r.tally.statuses[429] + r.tally.statuses[503]
    ans_s = answers / r.load_s if r.load_s else 0.0
    mb_s = r.tally.body_bytes / r.load_s / 1e6 if r.load_s else 0.0
    share = f"{100 * refused / answers:5.1f}%" if answers else "    -"
    vs_decoy = f"{r.det_per_s / decoy.det_per_s:6.2f}x" if decoy and decoy.det_per_s else "     -"
    same = "same" if r.totals == none.totals else "DIFF"
    health_share = f"{100 * r.health_ok / r.health_asked:5.0f}%" if r.health_asked else "    -"
    return (
        f"{route:<13} {n:>4} {target:<7} {r.det_per_s:6.2f} {r.det_per_s / none.det_per_s:6.2f}x "
        f"{vs_decoy} {r.totals[0]:>3}/{r.totals[1]:<3} {same:<4} {ans_s:8.0f} {mb_s:7.1f} "
        f"{share:>7} {health_share:>6}"
    )


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h %s"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip()[:60] or "not a git checkout"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--pollers", default="0,10,100,500")
    parser.add_argument(
        "--routes", default="/api/state,/metrics,/events,/snapshot.jpg,/stream.mjpg"
    )
    parser.add_argument("--lookout-only", action="store_true", help="no decoy runs")
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT,
        help="the checkout whose lookout runs (an older one, to compare)",
    )  # fmt: skip
    parser.add_argument("--decoy", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bodies", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.decoy is not None:
        decoy_main(args.decoy, args.bodies)
        return
    print(describe_cpu())
    counts = [int(n) for n in args.pollers.split(",")]
    routes = args.routes.split(",")
    bodies = Path(REPO_ROOT / "out" / "page_load_bodies.json")
    bodies.parent.mkdir(exist_ok=True)
    root = args.root.resolve()
    # The checkout is said by its commit; its place is this machine's business.
    where = "this checkout" if root == REPO_ROOT.resolve() else "--root"
    print(f"lookout from {where} ({_commit(root)})")
    none = run_once(args.seconds, routes[0], 0, decoy=False, bodies=bodies, save=True, root=root)
    print(
        f"{args.seconds} s of vtest.avi in real time, lamp-post line, 5 detections/s due; "
        f"readers in 2 processes; no readers: {none.det_per_s:.2f} det/s, "
        f"line {none.totals[0]} in / {none.totals[1]} out"
    )
    print(
        f"{'route':<13} {'N':>4} {'at':<7} {'det/s':>6} {'x none':>7} {'x decoy':>7} "
        f"{'totals':<7} {'':<4} {'ans/s':>8} {'MB/s':>7} {'refused':>7} {'health':>6}"
    )
    print("-" * 96)
    for route in routes:
        for n in counts:
            if n == 0:
                continue
            decoy = None
            if not args.lookout_only:
                decoy = run_once(args.seconds, route, n, decoy=True, bodies=bodies, root=root)
            mine = run_once(args.seconds, route, n, decoy=False, bodies=bodies, root=root)
            if decoy is not None:
                print(row(route, n, "decoy", decoy, none, None), flush=True)
            print(row(route, n, "lookout", mine, none, decoy), flush=True)


if __name__ == "__main__":
    main()
