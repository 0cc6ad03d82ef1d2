"""Readers that poll a web server as fast as it answers: the load of issue 33's first class.

``Pollers`` starts worker processes (a reader's work must not share the device's
interpreter lock, as a real client's does not), each with many keep-alive
connections on one route. A connection sends a request, reads the whole answer
and sends the next at once; a streaming route (``/events``, ``/stream.mjpg``) is
read until the server ends it, then opened again at once. A refused or reset
connection is opened again at once too: the readers never back off, whatever
the server says (``Retry-After`` included). Used by the tests of the status
server under load and by ``scripts/bench/page_load.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

STREAMING = ("/events", "/stream.mjpg")
HEAD_LIMIT = 64 * 1024


@dataclass
class Tally:
    """What the readers got: answers by status, bytes, streams opened, connection errors."""

    statuses: Counter[int] = field(default_factory=Counter)
    body_bytes: int = 0
    streams: int = 0
    errors: int = 0
    retry_after: int = 0  # answers that carried Retry-After

    @property
    def answers(self) -> int:
        return sum(self.statuses.values())

    def add(self, other: Tally) -> None:
        self.statuses.update(other.statuses)
        self.body_bytes += other.body_bytes
        self.streams += other.streams
        self.errors += other.errors
        self.retry_after += other.retry_after

    def as_json(self) -> dict[str, Any]:
        return {
            "statuses": {str(k): v for k, v in self.statuses.items()},
            "body_bytes": self.body_bytes,
            "streams": self.streams,
            "errors": self.errors,
            "retry_after": self.retry_after,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tally:
        tally = cls(body_bytes=data["body_bytes"], streams=data["streams"])
        tally.statuses.update({int(k): v for k, v in data["statuses"].items()})
        tally.errors = data["errors"]
        tally.retry_after = data["retry_after"]
        return tally


def _request(path: str, host: str, headers: Sequence[tuple[str, str]]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _read_answer(reader: asyncio.StreamReader, tally: Tally, streaming: bool) -> bool:
    """One answer; True when the connection may be used again."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > HEAD_LIMIT:
        raise ValueError("head too long")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    tally.statuses[status] += 1
    if "retry-after" in fields:
        tally.retry_after += 1
    if "content-length" in fields:
        size = int(fields["content-length"])
        await reader.readexactly(size)
        tally.body_bytes += size
    elif streaming or fields.get("transfer-encoding") == "chunked":
        # A stream (or a chunked answer): read to the end, as a viewer does.
        tally.streams += 1
        while chunk := await reader.read(65536):
            tally.body_bytes += len(chunk)
        return False
    return fields.get("connection", "").lower() != "close"


async def _poll_one(
    host: str, port: int, path: str, headers: Sequence[tuple[str, str]], tally: Tally
) -> None:
    request = _request(path, f"{host}:{port}", headers)
    streaming = path.split("?")[0] in STREAMING
    while True:
        writer: asyncio.StreamWriter | None = None
        try:
            reader, writer = await asyncio.open_connection(host, port, limit=HEAD_LIMIT * 2)
            while True:
                writer.write(request)
                if not await _read_answer(reader, tally, streaming):
                    break
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            tally.errors += 1
            await asyncio.sleep(0)  # the server closed or refused: again at once
        finally:
            if writer is not None:
                writer.close()


async def _worker_main(
    host: str, port: int, path: str, connections: int, headers: Sequence[tuple[str, str]],
    seconds: float,
) -> Tally:  # fmt: skip
    tally = Tally()
    ended = asyncio.Event()
    # SIGTERM ends the readers early, and they still report what they got.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, ended.set)
    tasks = [
        asyncio.create_task(_poll_one(host, port, path, headers, tally)) for _ in range(connections)
    ]
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(ended.wait(), timeout=seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return tally


def _worker_cli(argv: Sequence[str]) -> None:
    """``pollers.py HOST PORT PATH CONNECTIONS SECONDS [NAME:VALUE...]``: one worker,
    its tally as JSON on stdout at the end."""
    host, port, path, connections, seconds, *given = argv
    headers = tuple(tuple(h.split(":", 1)) for h in given)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tally = asyncio.run(
        _worker_main(host, int(port), path, int(connections), headers, float(seconds))  # type: ignore[arg-type]
    )
    print(json.dumps(tally.as_json()), flush=True)


class Pollers:
    """``count`` tight readers of ``path`` on ``host:port``, spread over ``processes``
    worker processes, for ``seconds`` (or until ``stop()``)."""

    def __init__(
        self,
        port: int,
        path: str,
        count: int,
        *,
        host: str = "127.0.0.1",
        processes: int | None = None,
        seconds: float = 3600.0,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.count = count
        self.started_at = 0.0
        self.ended_at = 0.0
        workers = processes or max(1, min(count, os.cpu_count() or 1))
        shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
        given = [f"{k}:{v}" for k, v in headers]
        self._commands = [
            [sys.executable, __file__, host, str(port), path, str(share), str(seconds), *given]
            for share in shares
            if share
        ]
        self._procs: list[subprocess.Popen[str]] = []

    def start(self) -> Pollers:
        self.started_at = time.monotonic()
        for command in self._commands:
            self._procs.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
        return self

    def stop(self) -> Tally:
        """End the readers now and add up what they got."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()  # SIGTERM: the worker stops its readers and reports
        return self.join()

    def join(self, timeout: float = 30.0) -> Tally:
        """Wait for the readers to end (their ``seconds`` up) and add up what they got;
        a worker that ended without a report adds nothing."""
        total = Tally()
        for proc in self._procs:
            try:
                out, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            with contextlib.suppress(ValueError):
                total.add(Tally.from_json(json.loads(out.strip().splitlines()[-1])))
        self.ended_at = time.monotonic()
        return total


if __name__ == "__main__":
    _worker_cli(sys.argv[1:])


__all__ = ["STREAMING", "Pollers", "Tally"]
