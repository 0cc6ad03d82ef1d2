"""What the status server pushes to a viewer: state as Server-Sent Events, frames as MJPEG.

Each loop runs until the viewer goes away (or, for frames, until none came for
``idle_s``: the page opens the stream again when they come back).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from aiohttp import web

from device.outputs.changes import Changes


async def push_states(
    response: web.StreamResponse,
    changes: Changes,
    state_json: Callable[[], str],
    *,
    min_interval_s: float,
    tick_s: float,
) -> None:
    try:
        while True:
            seen = changes.version
            await response.write(f"event: state\ndata: {state_json()}\n\n".encode())
            # Coalesce bursts (a fast replay changes state hundreds of times a second),
            # and tick even without changes so clocks and the chart move on.
            await anyio.sleep(min_interval_s)
            with anyio.move_on_after(tick_s):
                await changes.wait(seen)
    except ConnectionResetError:
        return  # the viewer went away


async def push_frames(
    response: web.StreamResponse,
    changes: Changes,
    frame_seq: Callable[[], int],
    render: Callable[[], Awaitable[tuple[int, bytes] | None]],
    *,
    boundary: str,
    idle_s: float,
    interval_s: float,
) -> None:
    # Chromium shows a part only once the next part has begun, so each frame is
    # followed at once by the next boundary and part header; parts therefore carry
    # no Content-Length (the boundary delimits them, as multipart allows).
    next_part = f"\r\n--{boundary}\r\nContent-Type: image/jpeg\r\n\r\n".encode()
    try:
        await response.write(next_part[2:])
        seen = -1
        while True:
            version = changes.version
            if version == seen or frame_seq() == 0:
                # No new frame (a camera outage, none yet): not for ever.
                with anyio.move_on_after(idle_s) as waited:
                    await changes.wait(version)
                if waited.cancelled_caught:
                    return
                continue
            seen = version
            snapshot = await render()
            if snapshot is None:
                continue
            await response.write(snapshot[1] + next_part)
            await anyio.sleep(interval_s)
    except ConnectionResetError:
        return  # the viewer went away


__all__ = ["push_frames", "push_states"]
