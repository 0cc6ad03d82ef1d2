"""Two JSON-lines sinks appending to one file, in two threads, on a disk that fills up.

``python -m tests.jsonl_writers PATH STEPS FREE_AT``, started with a file size limit
(RLIMIT_FSIZE, soft) standing in for the disk: each thread has its own ``JsonlSink``
on PATH and they take turns, one line each, so their lines interleave line by line.
At step FREE_AT the limit is lifted (the disk was freed). Prints, as JSON, the text of
every line each sink says it wrote, and how many each lost.
"""

from __future__ import annotations

import functools
import json
import operator
import resource
import sys
import threading
from pathlib import Path

from device.outputs.sinks import JsonlSink
from live.events import ModelText

PAD = "x" * 150  # lines of about 200 bytes: a few dozen fill the small "disk"


def main(path: Path, steps: int, free_at: int) -> None:
    sinks = [JsonlSink(path), JsonlSink(path)]
    landed: list[list[str]] = [[], []]
    turn = [0]  # whose line is next: 2 * step + writer
    cond = threading.Condition()

    def writer(k: int) -> None:
        sink = sinks[k]
        for step in range(steps):
            with cond:
                cond.wait_for(functools.partial(operator.eq, turn, [2 * step + k]))
                if k == 0 and step == free_at:
                    unlimited = resource.RLIM_INFINITY
                    resource.setrlimit(resource.RLIMIT_FSIZE, (unlimited, unlimited))
                text = f"{'ab'[k]}-{step}-{PAD}"
                before = sink.written
                sink.write(ModelText(t=float(step), text=text))
                if sink.written > before:
                    landed[k].append(text)
                turn[0] += 1
                cond.notify_all()

    threads = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sink in sinks:
        sink.close()
    print(json.dumps({"landed": landed, "lost": [sink.lost for sink in sinks]}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
