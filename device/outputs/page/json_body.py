"""A request's JSON object body, read within a time limit, or why it cannot be had."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
from aiohttp import web


@dataclass(frozen=True)
class BodyError:
    status: int
    error: str


async def json_object(request: web.Request, timeout_s: float) -> dict[str, Any] | BodyError:
    if request.content_type != "application/json":
        return BodyError(415, "send a JSON body")
    # A whole body within the time a head gets: a peer trickling a byte now and then
    # would otherwise hold its connection (and, a few hundred of them, the server).
    with anyio.move_on_after(timeout_s) as waited:
        raw = await request.read()
    if waited.cancelled_caught:
        return BodyError(408, "the request body came too slowly")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return BodyError(400, "body is not valid JSON")
    if not isinstance(body, dict):
        return BodyError(400, "body must be a JSON object")
    return body


__all__ = ["BodyError", "json_object"]
