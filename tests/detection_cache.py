"""The real detector's answers, remembered for one test session.

Many tests replay the sample video through the real detector with the same settings, in
this process or in a ``lookout`` subprocess: each of them ran the same ~50 ms inference
on the same frames again. Inside ``remembered(folder)`` (the ``remembered_detections``
fixture) ``PersonDetector.detect`` answers a frame it has answered before in this session
from ``folder``; any other frame runs the real detector, and its answer is kept there.
A ``lookout`` started meanwhile with this environment (``tests.cli.offline_env``) does the
same (``tests/detection_cache_site/sitecustomize.py``), so the processes share the folder.

What makes an answer the same one: the model file's bytes, the detector's thresholds,
input size and thread count, and every pixel of the frame (shape and bytes). So a hit
is exactly what the real detector said for those pixels, earlier in the same session with
the same code: nothing is kept between sessions, the order of the tests changes only
which of them runs an inference first. Loading the model, its checks and everything
after the detector (tracker, scene, outputs) still run every time. The detector's own
tests (tests/models) and anything that times the detector leave it off.

This module is also loaded by file by the subprocess hook: it imports nothing of the
repository at import time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ENV = "LOOKOUT_TEST_DETECTIONS"  # the session's folder of remembered answers
SITE = Path(__file__).resolve().parent / "detection_cache_site"  # holds the sitecustomize


class DetectionCache:
    """Answers by (detector, frame) in ``folder``, shared by processes, and in memory here."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.memory: dict[tuple[str, str], np.ndarray] = {}
        self.models: dict[tuple[str, int, int], str] = {}
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def detector_key(self, detector: Any) -> str:
        path = Path(detector.path).resolve()
        st = path.stat()
        with self.lock:
            model = self.models.get((str(path), st.st_size, st.st_mtime_ns))
        if model is None:
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            model = digest.hexdigest()
            with self.lock:
                self.models[(str(path), st.st_size, st.st_mtime_ns)] = model
        backend = detector.backend
        threads = backend.intra_op_threads
        # What runs the network counts too: OpenVINO in bf16 answers a little differently.
        runs = (type(backend).__name__, getattr(backend, "arithmetic", ""))
        ident = (model, detector.kind, tuple(detector.input_size), detector.threshold,
                 detector.iou, threads, runs)  # fmt: skip
        return hashlib.sha256(repr(ident).encode()).hexdigest()[:32]

    @staticmethod
    def frame_key(frame: np.ndarray) -> str:
        pixels = np.ascontiguousarray(frame)
        digest = hashlib.blake2b(repr(pixels.shape).encode(), digest_size=20)
        digest.update(memoryview(pixels).cast("B"))
        return digest.hexdigest()

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self.lock:
            found = self.memory.get(key)
        if found is None:
            path = self.folder / key[0] / f"{key[1]}.npy"
            try:
                found = np.load(path, allow_pickle=False)
            except (FileNotFoundError, ValueError, OSError):
                return None
            with self.lock:
                self.memory[key] = found
        return found

    def put(self, key: tuple[str, str], rows: np.ndarray) -> None:
        with self.lock:
            self.memory[key] = rows
        folder = self.folder / key[0]
        path = folder / f"{key[1]}.npy"
        # Another process may write the same answer at the same time: each writes its own
        # file and renames it into place, so a reader sees a whole file or none.
        part = folder / f"{key[1]}.{os.getpid()}.{threading.get_ident()}.part"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with open(part, "wb") as fh:
                np.save(fh, rows, allow_pickle=False)
            os.replace(part, path)
        except OSError:
            # A test that fills the disk under the run (RLIMIT_FSIZE): the answer stays
            # in this process only; the run must not notice.
            part.unlink(missing_ok=True)


def _is_frame(frame: object) -> bool:
    return (
        isinstance(frame, np.ndarray)
        and frame.dtype == np.uint8
        and frame.ndim == 3
        and frame.shape[2] == 3
        and frame.shape[0] > 0
        and frame.shape[1] > 0
    )


def patch(detector_class: Any, cache: DetectionCache) -> Callable[[], None]:
    """``detector_class.detect`` answering from ``cache``; returns the undo."""
    real = detector_class.__dict__["detect"]

    def detect(self: Any, frame_bgr: Any) -> Any:
        if not _is_frame(frame_bgr):
            return real(self, frame_bgr)  # its own refusal, unchanged
        from models.detections import Detections

        key = (cache.detector_key(self), cache.frame_key(frame_bgr))
        rows = cache.get(key)
        if rows is None:
            found = real(self, frame_bgr)
            rows = np.concatenate([found.boxes, found.scores[:, None]], axis=1).astype(np.float32)
            cache.put(key, rows)
            cache.misses += 1
        else:
            cache.hits += 1
        # Fresh arrays every time: whoever gets them may change them.
        return Detections(np.array(rows[:, :4], np.float32), np.array(rows[:, 4], np.float32))

    detect.__doc__ = real.__doc__
    detect.remembered = cache  # type: ignore[attr-defined]
    detector_class.detect = detect

    def undo() -> None:
        detector_class.detect = real

    return undo


_caches: dict[Path, DetectionCache] = {}


def cache_at(folder: Path) -> DetectionCache:
    """The one cache of ``folder`` in this process (its memory outlives each test)."""
    if folder not in _caches:
        _caches[folder] = DetectionCache(folder)
    return _caches[folder]


@contextlib.contextmanager
def remembered(folder: Path) -> Iterator[DetectionCache]:
    """Detections answered from ``folder`` here, and in the ``lookout`` processes started
    meanwhile with ``os.environ`` (their PYTHONPATH gets the hook)."""
    from models.detector import PersonDetector

    cache = cache_at(folder)
    saved = {name: os.environ.get(name) for name in (ENV, "PYTHONPATH")}
    undo = patch(PersonDetector, cache)
    os.environ[ENV] = str(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), saved["PYTHONPATH"]) if p)
    try:
        yield cache
    finally:
        undo()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def install_on_import() -> None:
    """In a subprocess: patch ``models.detector.PersonDetector`` once it is imported (from
    wherever that process imports it), with the cache in ``$LOOKOUT_TEST_DETECTIONS``."""
    import importlib.abc
    import importlib.machinery

    folder = Path(os.environ[ENV])

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(
            self, fullname: str, path: Any, target: Any = None
        ) -> importlib.machinery.ModuleSpec | None:
            if fullname != "models.detector":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            loader: Any = spec.loader
            run = loader.exec_module

            def exec_module(module: Any) -> None:
                run(module)
                patch(module.PersonDetector, cache_at(folder))

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Hook())


__all__ = ["ENV", "DetectionCache", "cache_at", "install_on_import", "patch", "remembered"]
