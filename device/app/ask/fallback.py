"""``lookout ask`` without a network: the offline model answers, and says so.

``run`` keeps counting and retrying while Gemini cannot be reached; a question is
answered now, so ``ask`` falls back to the local model, as an offline device would. Only
before Gemini has said anything: a conversation it started is not handed over halfway
(its history has Gemini's own calls), and a refusal (a bad key, a quota) is not a missing
network and is said as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from live.turns.model import TurnModel, TurnModelError, TurnReply, TurnRequest


class FallbackTurnModel:
    def __init__(self, primary: TurnModel, fallback: TurnModel, say: Callable[[str], None]) -> None:
        self.primary = primary
        self.fallback = fallback
        self.say = say
        self.name = primary.name
        self._using: TurnModel | None = None  # decided by the first step

    async def generate(self, request: TurnRequest) -> TurnReply:
        if self._using is not None:
            return await self._using.generate(request)
        try:
            reply = await self.primary.generate(request)
        except TurnModelError as exc:
            if not exc.unreachable:
                raise
            self.say(f"{exc}; the local model answers instead")
            self._using = self.fallback
            self.name = self.fallback.name
            return await self.fallback.generate(request)
        self._using = self.primary
        return reply

    async def aclose(self) -> None:
        for model in (self.primary, self.fallback):
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()


__all__ = ["FallbackTurnModel"]
