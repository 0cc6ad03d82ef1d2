"""What perception publishes, into the live session: the one way the tools hear of a count.

Perception publishes each percept, and the count becoming unknown, once, on the bus's
percept channel (``device/bus.py``); the page, the metrics and the snapshots read it
there, and so does this feed, which puts each into the session's request queue beside
its frame, named by its camera: a streaming tool's input (``count_people``, the
watches) takes its camera's items in frame order, and an unknown count reaches it
in-band, after the last percept that held. Frames perception did not look at (off the
detection grid) go to the queue from the camera's own loop, for the model lane.
"""

from __future__ import annotations

from device.vision.percept import CountUnknown, Perceived, Percept
from live.requests import LiveRequestQueue


class SessionFeed:
    """A bus percept subscriber that puts what it is given into ``queue``."""

    def __init__(self, queue: LiveRequestQueue[Percept | CountUnknown]) -> None:
        self.queue = queue

    def __call__(self, item: Perceived) -> None:
        if self.queue.closed:
            return  # the run is ending: nobody reads the queue any more
        if isinstance(item, CountUnknown):
            self.queue.send_realtime(percept=item, origin=item.camera)
        else:
            self.queue.send_realtime(frame=item.frame, percept=item, origin=item.camera)


__all__ = ["SessionFeed"]
