"""``look``: vision on demand. The model glances at the newest frame when it needs to.

Without ``--send-frames`` the model is blind, and with it every frame is billed
(about 258 tokens a second, again and again). ``look`` is the third way: on a
call, the newest frame perception has finished with (the same percept
``count_people_now`` reads) is drawn with the detector's boxes and the track
ids, scaled to at most 768 px, encoded as JPEG in a worker thread and put
before the model once, as realtime video, ahead of the call's answer
(``ToolContext.show``). The answer names that same frame (its time and
sequence number), the count and the boxes, so what the model reads and what it
sees are one moment.

Never an old picture as current: with no frame yet, or the count unknown (the
camera is down or stale: perception's ``current()`` is None then) the answer
says so and no image goes. Past 80 % of a token budget (``--budget-tokens``,
``--budget-session``) it is refused with the reason. Bounded: ``per_minute``
looks in any 60 s (on the call's clock); past it the call is refused with when
it may look again. In privacy mode it is refused, always, and nothing is
rendered.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import anyio
import numpy as np
from pydantic import Field

from device.outputs.page.render import DisplayFrame, SceneGeometry, render_jpeg
from device.vision.percept import CurrentPercept, Percept, Track
from live import wire
from live.tool import ToolContext

TOOL = "look"
MAX_SIDE = 768  # px, the longest side of what the model is shown
WINDOW_S = 60.0
SENT = "sent as realtime video just before this answer"
PRIVACY = "privacy mode: no image leaves the device"
OUTCOMES = ("sent", "not_sent", "refused_rate", "refused_privacy", "refused_budget", "unknown")


def _no_percept() -> Percept | None:
    return None


def _no_reason() -> str:
    return "no current frame (no frame yet)"


def _no_cap() -> str | None:
    return None


@dataclass(frozen=True)
class LookImage:
    """What the model is shown: the JPEG, its size, and the factor the frame was scaled by."""

    jpeg: bytes
    width: int
    height: int
    scale: float


def picture(
    percept: Percept,
    geometry: SceneGeometry | None = None,
    max_side: int = MAX_SIDE,
    quality: int = 80,
) -> LookImage:
    """The percept's frame scaled to ``max_side`` with its boxes, ids, lines and zones drawn
    on a copy, as JPEG. Blocking (resize, draw, encode): run it in a worker thread."""
    import cv2

    image = percept.frame.image
    height, width = image.shape[:2]
    scale = min(1.0, max_side / max(height, width))
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    boxes = np.asarray(percept.detections.boxes, np.float64).reshape(-1, 4) * scale
    display = dataclasses.replace(
        DisplayFrame.of(percept, percept.seq, geometry or SceneGeometry()),
        image=image,
        boxes=boxes,
        tracks=tuple(_scaled(t, scale) for t in percept.tracks),
        people=tuple(_scaled(t, scale) for t in percept.people),
    )
    jpeg = render_jpeg(display, quality)
    return LookImage(jpeg, image.shape[1], image.shape[0], scale)


def _scaled(track: Track, scale: float) -> Track:
    x1, y1, x2, y2 = track.box
    return replace(track, box=(x1 * scale, y1 * scale, x2 * scale, y2 * scale))


def described_people(percept: Percept) -> list[dict[str, Any]]:
    """The people the count counts: track id (None: counted on sight, no id yet) and box,
    normalised to 0..1 of the frame's width and height."""
    height, width = percept.frame.image.shape[:2]
    out: list[dict[str, Any]] = []
    for track in percept.people:
        x1, y1, x2, y2 = track.box
        box = [x1 / width, y1 / height, x2 / width, y2 / height]
        out.append(
            {
                "id": track.id or None,
                "box": [round(min(1.0, max(0.0, v)), 3) for v in box],
                "seen": track.seen,
            }
        )
    return out


@dataclass
class Look:
    """The look tool over the device's perception (``current`` gives its newest percept)."""

    current: CurrentPercept = field(default=_no_percept)
    why_unknown: Callable[[], str] = field(default=_no_reason)
    per_minute: int = 4
    privacy: bool = False
    geometry: SceneGeometry | None = None
    max_side: int = MAX_SIDE
    quality: int = 80
    # Why the spending cap stops looks now (None: it does not; ``live/link/budget.py``).
    budget: Callable[[], str | None] = field(default=_no_cap)
    # How each call ended (OUTCOMES), for /metrics.
    outcomes: Counter[str] = field(default_factory=Counter)
    _looks: deque[float] = field(default_factory=deque, init=False, repr=False)

    async def look(
        self,
        context: ToolContext,
        question: Annotated[
            str, Field(description="what you want to see (echoed back; optional)")
        ] = "",
    ) -> dict[str, Any]:
        """Look at the camera's newest frame: you receive it as an image (video input)
        just before this answer, with the people the device counts boxed and numbered.

        Use it when a count change needs explaining, or to answer what people wear or do
        or what something looks like. Not for counts: count_people is cheaper. Limited
        to a few looks a minute.

        Returns {"status": "ok", "frame": {"seq", "index", "t"}, "people": n, "boxes":
        [{"id", "box": [x1, y1, x2, y2] in 0..1}], "size": [w, h], "image": ...};
        {"status": "unknown", "reason"} when there is no current frame;
        {"status": "refused", "reason", "retry_in_s"} past the limit.
        """
        asked = {"question": question} if question else {}
        if self.privacy:
            return self._refused("refused_privacy", PRIVACY, asked)
        spent = self.budget()
        if spent is not None:
            return self._refused("refused_budget", spent, asked)
        now = context.clock.now()
        while self._looks and self._looks[0] <= now - WINDOW_S:
            self._looks.popleft()
        if self.per_minute <= 0:
            return self._refused("refused_rate", "looking is off (look_per_minute is 0)", asked)
        if len(self._looks) >= self.per_minute:
            wait = max(0.0, self._looks[0] + WINDOW_S - now)
            reason = (
                f"looked {len(self._looks)} times in the last minute (at most "
                f"{self.per_minute}); look again in {math.ceil(wait)} s"
            )
            return self._refused("refused_rate", reason, asked, retry_in_s=math.ceil(wait))
        percept = self.current()
        if percept is None or percept.count is None:
            self.outcomes["unknown"] += 1
            return {"status": "unknown", "reason": self.why_unknown(), **asked}
        # The slot is taken before the picture is made, so two calls at once cannot both
        # slip under the bound; it is given back if no image goes.
        self._looks.append(now)
        shot = await anyio.to_thread.run_sync(
            picture, percept, self.geometry, self.max_side, self.quality
        )
        sent = context.show(wire.Blob(data=shot.jpeg, mime_type="image/jpeg"))
        if sent:
            self.outcomes["sent"] += 1
            image = SENT
        else:
            self._looks.remove(now)
            self.outcomes["not_sent"] += 1
            image = "not sent: no model is connected to this call"
        return {
            "status": "ok",
            "frame": {
                "seq": percept.seq,
                "index": percept.frame.index,
                "t": round(percept.t_media, 2),
                "source": percept.frame.source,
            },
            "people": percept.count,
            "boxes": described_people(percept),
            "size": [shot.width, shot.height],
            **asked,
            "image": image,
            "looks_left": max(0, self.per_minute - len(self._looks)),
        }

    def of_camera(
        self,
        current: CurrentPercept,
        why_unknown: Callable[[], str],
        *,
        privacy: bool,
        geometry: SceneGeometry | None,
    ) -> Look:
        """This look at another camera's frames: its picture, its privacy, and the device's
        one bound, budget and count of outcomes (every look costs the same, whoever's)."""
        view = replace(
            self,
            current=current,
            why_unknown=why_unknown,
            privacy=privacy,
            geometry=geometry,
            budget=lambda: self.budget(),  # set on this one once the session exists
        )
        view._looks = self._looks
        return view

    def _refused(
        self, outcome: str, reason: str, asked: dict[str, Any], **more: Any
    ) -> dict[str, Any]:
        self.outcomes[outcome] += 1
        return {"status": "refused", "reason": reason, **more, **asked}


__all__ = ["MAX_SIDE", "OUTCOMES", "PRIVACY", "SENT", "TOOL", "Look", "LookImage", "picture"]
