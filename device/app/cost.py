"""What the current settings may cost in model tokens: ``lookout run`` says it at start.

An upper bound of the input the device itself sends a Gemini Live model in an hour,
from the settings alone, so a user sees the cost before paying it. The assumptions
(README, "Spending cap"):

- a frame (``--send-frames``) or a look is one image at media resolution LOW: 64 tokens;
- a look's answer (the frame's time, the count and each person's box) ~150 tokens;
- a count update (an emission of a stream) ~25 tokens; at most one per detection
  (``--detect-fps``) per running stream, which is the worst case: a still scene sends
  almost none;
- the microphone: 32 tokens a second of audio while it is streamed (with push-to-talk
  only while talk is held).

Not in it: what the model says, and the context it re-reads at each turn (billed as
prompt tokens again, up to the context-window compression's window), which the usage
metadata counts and the cap (``--budget-tokens``) limits.
"""

from __future__ import annotations

from dataclasses import dataclass

from device.app.instruction import frames_camera, offers_look
from device.config import Config

IMAGE_TOKENS = 64  # an image at media resolution LOW
LOOK_ANSWER_TOKENS = 150
UPDATE_TOKENS = 25
AUDIO_TOKENS_PER_S = 32
HOUR_S = 3600


@dataclass(frozen=True)
class Projection:
    """Tokens an hour, at most, by what sends them."""

    frames: int = 0
    looks: int = 0
    updates: int = 0
    audio: int = 0

    @property
    def total(self) -> int:
        return self.frames + self.looks + self.updates + self.audio


def projection(config: Config) -> Projection | None:
    """The hour's input at these settings (None: the local model, which costs nothing)."""
    if not config.uses_gemini:
        return None
    private = config.device.privacy
    frames = 0
    if frames_camera(config) is not None:  # one camera's, not in privacy mode
        frames = round(config.model.model_fps * HOUR_S * IMAGE_TOKENS)
    looks = 0
    if offers_look(config):
        looks = config.model.look_per_minute * 60 * (IMAGE_TOKENS + LOOK_ANSWER_TOKENS)
    updates = round(config.detection_fps() * HOUR_S * UPDATE_TOKENS)
    audio = AUDIO_TOKENS_PER_S * HOUR_S if config.audio.mic is not None and not private else 0
    return Projection(frames=frames, looks=looks, updates=updates, audio=audio)


def _n(value: float) -> str:
    return f"{round(value):,}".replace(",", " ")


def projected_line(config: Config) -> str | None:
    """The start-up line: the projected tokens an hour and what they come from."""
    cost = projection(config)
    if cost is None:
        return None
    parts = []
    if cost.frames:
        fps = config.model.model_fps
        parts.append(f"frames {_n(cost.frames)} ({fps:g} a second x {IMAGE_TOKENS})")
    elif config.device.privacy or config.model.send_frames is not False:
        parts.append("no frames (privacy)")
    else:
        parts.append("no frames (--send-frames off)")
    if cost.looks:
        each = IMAGE_TOKENS + LOOK_ANSWER_TOKENS
        parts.append(f"looks {_n(cost.looks)} ({config.model.look_per_minute} a minute x ~{each})")
    if cost.audio:
        parts.append(f"microphone {_n(cost.audio)} ({AUDIO_TOKENS_PER_S} a second of audio)")
    updates = (
        f"count updates up to {_n(cost.updates)} per stream (a change at every detection, "
        f"{config.detection_fps():g} a second x ~{UPDATE_TOKENS}; a still scene: almost none)"
    )
    limits = [
        f"{_n(value)} {what}"
        for value, what in (
            (config.model.budget_tokens, "an hour"),
            (config.model.budget_session, "this run"),
        )
        if value is not None
    ]
    cap = f"cap {' and '.join(limits)}" if limits else "no cap (--budget-tokens N)"
    steady = cost.frames + cost.looks + cost.audio
    return (
        f"model input at these settings: up to ~{_n(steady)} tokens an hour: "
        f"{'; '.join(parts)}; plus {updates}; plus the context each turn re-reads; {cap}"
    )


__all__ = ["Projection", "projected_line", "projection"]
