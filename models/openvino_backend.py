"""The detector's network run by OpenVINO on the CPU (the optional ``lookout[openvino]``).

OpenVINO's CPU plugin computes in the lowest float precision the CPU does natively unless
told otherwise: bf16 on AVX-512 BF16 or AMX, fp16 on Arm cores with fp16 arithmetic, else
f32. On an AMX Xeon that is ~4x less CPU per NanoDet-g inference than onnxruntime's fp32
(docs/benchmarks.md); whether its counts are good enough is the accuracy rule's to say
(``models/accuracy.py``), never assumed.

The shipped ONNX files hold a ScatterND left over from their conversion (an empty scatter
into the constant shape of a Reshape) that OpenVINO's ONNX reader refuses; onnxruntime's
basic graph optimisation (constant folding, which it always applies on load) removes it with
bit-identical outputs. So OpenVINO reads a copy re-saved that way, made once per model file
and kept in Lookout's cache folder (``models/cache.py``) under the file's hash: a run's
start writes nothing (a full disk does not stop it), and a copy that cannot be made is
OpenVINO failing to load, which ``auto`` then does not choose.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from models.backend import BackendError, one_line
from models.detections import FloatArray

# OpenVINO's element types as ONNX names them (the detector checks for a float input).
_ONNX_TYPES = {"f32": "tensor(float)", "f16": "tensor(float16)", "u8": "tensor(uint8)"}


def openvino_version() -> str | None:
    """The installed OpenVINO's version (``2026.4.1``), None when it cannot be imported."""
    if openvino_available() is not None:
        return None
    import openvino

    return str(openvino.__version__).split("-")[0]


def openvino_available() -> str | None:
    """None when OpenVINO can be used here, else why not (one line)."""
    try:
        with _altstack_kept():
            import openvino  # noqa: F401
    except ImportError:
        return "OpenVINO is not installed (pip install 'lookout[openvino]')"
    except Exception as exc:  # a broken install says so instead of failing the run
        return f"OpenVINO cannot be imported: {one_line(exc)}"
    return None


def simplified_onnx(path: Path, folder: Path | None = None) -> Path:
    """``path`` re-saved by onnxruntime after its basic (exact) graph optimisation, kept in
    ``folder`` (default: Lookout's cache) under the file's hash."""
    import onnxruntime as ort

    from models.cache import cache_dir
    from models.detector import sha256_file

    folder = cache_dir() / "openvino" if folder is None else folder
    out = folder / f"{sha256_file(path)[:24]}.onnx"
    if out.is_file():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f".{out.name}.{os.getpid()}"
    try:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = str(part)
        opts.log_severity_level = 3
        ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        part.replace(out)
    finally:
        part.unlink(missing_ok=True)
    return out


class _AltStack(ctypes.Structure):
    _fields_ = [("sp", ctypes.c_void_p), ("flags", ctypes.c_int), ("size", ctypes.c_size_t)]


@contextmanager
def _altstack_kept() -> Iterator[None]:
    """The thread's alternate signal stack as it was before OpenVINO loaded.

    Loading and compiling with OpenVINO left the main thread an alternate signal stack of
    its own (20 kB) that did not stay valid: Python's handlers run on it (SA_ONSTACK), and
    a Ctrl-C soon after crashed the interpreter (SIGSEGV) instead of stopping it.
    Restoring the previous one (none, for Python) keeps signals on the thread's stack.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        before = _AltStack()
        known = libc.sigaltstack(None, ctypes.byref(before)) == 0
    except (OSError, AttributeError):  # not a libc with sigaltstack: nothing to keep
        known = False
    try:
        yield
    finally:
        if known:
            now = _AltStack()
            if libc.sigaltstack(None, ctypes.byref(now)) == 0 and now.sp != before.sp:
                if before.sp is None or before.flags & _SS_DISABLE:
                    off = _AltStack(None, _SS_DISABLE, 0)
                    libc.sigaltstack(ctypes.byref(off), None)
                else:
                    libc.sigaltstack(ctypes.byref(before), None)


_SS_DISABLE = 2


class OpenVinoBackend:
    """The model compiled by OpenVINO for the CPU, ``threads`` per inference (None: its own
    choice). ``exact``: compute in f32 even where the CPU offers bf16/fp16. ``size``: the
    input's (width, height) instead of the file's, for a fully convolutional model such as
    NanoDet (multiples of 32; ``scripts/bench/detector.py --sizes`` measures what it buys)."""

    def __init__(
        self,
        path: Path,
        *,
        threads: int | None = None,
        exact: bool = False,
        size: tuple[int, int] | None = None,
    ) -> None:
        with _altstack_kept():
            self._load(path, threads=threads, exact=exact, size=size)

    def _load(
        self, path: Path, *, threads: int | None, exact: bool, size: tuple[int, int] | None
    ) -> None:
        why_not = openvino_available()
        if why_not:
            raise BackendError(why_not)
        import openvino as ov

        config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        if threads is not None:
            config["INFERENCE_NUM_THREADS"] = int(threads)
        if exact:
            config["INFERENCE_PRECISION_HINT"] = "f32"
        core = ov.Core()
        try:
            if path.suffix.lower() == ".xml":  # OpenVINO's own format
                model = core.read_model(str(path))
            else:  # ONNX, read by onnxruntime first: what is not ONNX is refused there,
                # before OpenVINO's readers try it as every format they know, aloud
                model = core.read_model(str(simplified_onnx(path)))
            if size is not None:
                model.reshape([1, 3, size[1], size[0]])
            self._compiled: Any = core.compile_model(model, "CPU", config)
        except Exception as exc:
            raise BackendError(f"OpenVINO cannot load {path}: {one_line(exc)}") from None
        if len(self._compiled.inputs) != 1:
            raise BackendError(f"{path}: expected one float input [1,3,H,W]")
        port = self._compiled.inputs[0]
        self._dims = tuple(
            d.get_length() if d.is_static else None for d in port.get_partial_shape()
        )
        self._type = _ONNX_TYPES.get(port.get_element_type().get_type_name(), "other")
        self._request: Any = self._compiled.create_infer_request()
        self.arithmetic: str = _arithmetic(self._compiled)

    @property
    def input_dims(self) -> tuple[Any, ...]:
        return self._dims

    @property
    def input_type(self) -> str:
        return self._type

    @property
    def intra_op_threads(self) -> int:
        """Threads one inference may use, as compiled."""
        return int(self._compiled.get_property("INFERENCE_NUM_THREADS"))

    def run(self, blob: FloatArray) -> list[np.ndarray]:
        # The request's output tensors are reused by the next inference: copies go out.
        results = self._request.infer({0: blob})
        return [np.array(results[port]) for port in self._compiled.outputs]


def _arithmetic(compiled: Any) -> str:
    """The float precision the plugin computes in (``bf16``, ``f16`` or ``f32``)."""
    try:
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")
    except Exception:
        return "f32"
    name = getattr(hint, "get_type_name", lambda: str(hint))()
    return {"bf16": "bf16", "f16": "fp16", "f32": "fp32"}.get(name, name)


__all__ = ["OpenVinoBackend", "openvino_available", "openvino_version", "simplified_onnx"]
