"""Offline speech with espeak-ng: what the device can say with no model and no network.

espeak-ng writes a WAV file (``-w``), read back with the stdlib ``wave``: its
``--stdout`` WAV has a placeholder length in the header (it cannot seek a pipe), which
readers take for a truncated or endless file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import wave

import anyio

from device.audio.ports import SAMPLE_BYTES, AudioError

MAX_TEXT = 5_000  # characters; more than anyone wants read out by a kiosk


class Espeak:
    """espeak-ng as a local voice: text in, PCM16 mono and its rate out."""

    def __init__(
        self,
        *,
        voice: str | None = None,
        speed_wpm: int | None = None,
        timeout_s: float = 20.0,
        binary: str = "espeak-ng",
    ) -> None:
        self.voice = voice
        self.speed_wpm = speed_wpm
        self.timeout_s = timeout_s
        self.binary = binary

    def available(self) -> bool:
        return shutil.which(self.binary) is not None

    async def synthesize(self, text: str) -> tuple[bytes, int]:
        """Speak ``text``: (PCM16 mono, its rate). Raises ``AudioError`` (one line)."""
        words = " ".join(text.split())
        if not words:
            raise AudioError("nothing to say: the text is empty")
        if len(words) > MAX_TEXT:
            raise AudioError(f"text too long to speak ({len(words)} > {MAX_TEXT} characters)")
        return await anyio.to_thread.run_sync(self._synthesize, words)

    def _command(self, path: str, text: str) -> list[str]:
        found = shutil.which(self.binary)
        if found is None:
            raise AudioError(f"{self.binary} is not installed (Debian: apt install espeak-ng)")
        command = [found, "-w", path]
        if self.voice:
            command += ["-v", self.voice]
        if self.speed_wpm:
            command += ["-s", str(self.speed_wpm)]
        return [*command, "--", text]  # "--": text that starts with "-" is still text

    def _synthesize(self, text: str) -> tuple[bytes, int]:
        fd, path = tempfile.mkstemp(prefix="lookout-say-", suffix=".wav")
        os.close(fd)
        try:
            command = self._command(path, text)
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=self.timeout_s, check=False
                )
            except subprocess.TimeoutExpired:
                raise AudioError(f"{self.binary} took over {self.timeout_s:g} s") from None
            except OSError as exc:
                raise AudioError(f"cannot run {self.binary}: {exc}") from None
            if done.returncode != 0:
                said = (done.stderr or done.stdout).strip().splitlines()
                reason = said[0] if said else f"exit status {done.returncode}"
                raise AudioError(f"{self.binary} failed: {reason}")
            return _read_wav(path, self.binary)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _read_wav(path: str, who: str) -> tuple[bytes, int]:
    try:
        with wave.open(path, "rb") as wav:
            if wav.getsampwidth() != SAMPLE_BYTES or wav.getnchannels() != 1:
                raise AudioError(
                    f"{who} wrote {wav.getnchannels()} channel(s) of {wav.getsampwidth() * 8}-bit"
                    " audio, not 16-bit mono"
                )
            return wav.readframes(wav.getnframes()), wav.getframerate()
    except (wave.Error, EOFError, OSError) as exc:
        raise AudioError(f"{who} wrote no readable WAV: {exc}") from None


__all__ = ["MAX_TEXT", "Espeak"]
