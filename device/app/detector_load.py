"""Whether the one detector keeps up with every camera, said rather than lagged silently.

Cameras take turns at the shared detector (``device/vision/shared_detector.py``). When
they ask for more than it can do, each gets fewer detections than its rate asks
for: a replay in real time skips late frames, a live camera's next frame comes
later. Each camera's achieved rate (the frames perception looked at: detected,
or held by the motion gate because nothing moved) is measured over a window and
kept on the camera (``Camera.achieved_fps``: the page and ``/metrics`` show it);
a camera that stays below ``BEHIND`` of its rate for a whole window is said once
(``till: the detector keeps up with 3.1 of 5 detections a second``), and again
once it keeps up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from device.app.camera import Camera
from live.util.clock import Clock

WINDOW_S = 10.0
BEHIND = 0.8  # of a camera's detection rate, below which it is behind


def _looks(camera: Camera) -> int:
    stats = camera.perception.stats
    return stats.detected + stats.gated


class DetectorLoad:
    """Measures each camera's achieved detection rate; says who falls behind."""

    def __init__(
        self,
        cameras: Sequence[Camera],
        say: Callable[[str], None],
        clock: Clock,
        *,
        window_s: float = WINDOW_S,
    ) -> None:
        # A fast replay waits for its consumers: it is never behind, only slower.
        self.cameras = [camera for camera in cameras if camera.watched]
        self.say = say
        self.clock = clock
        self.window_s = window_s

    async def watch(self) -> None:
        before = {camera.name: (_looks(camera), camera.perception.known) for camera in self.cameras}
        while True:
            await self.clock.sleep(self.window_s)
            for camera in self.cameras:
                looks, known_before = before[camera.name]
                now = _looks(camera)
                known = camera.perception.known
                before[camera.name] = (now, known)
                if camera.ended or not (known and known_before):
                    # Not counting for the whole window (starting, down, ended): its rate
                    # says nothing of the detector.
                    camera.achieved_fps = None
                    continue
                self._measured(camera, (now - looks) / self.window_s)

    def _measured(self, camera: Camera, achieved: float) -> None:
        camera.achieved_fps = achieved
        due = 1.0 / camera.perception.interval
        behind = achieved < BEHIND * due
        if behind == camera.behind:
            return
        camera.behind = behind
        whose = f"{camera.name}: " if camera.config.named_cameras else ""
        sharing = len(self.cameras)
        shared = f" ({sharing} cameras share it)" if sharing > 1 else ""
        if behind:
            self.say(
                f"{whose}the detector keeps up with {achieved:.1f} of {due:g} detections a "
                f"second{shared}: lower --detect-fps, or run lookout doctor for a faster backend"
            )
        else:
            self.say(f"{whose}the detector keeps up again ({achieved:.1f} detections a second)")


__all__ = ["BEHIND", "WINDOW_S", "DetectorLoad"]
