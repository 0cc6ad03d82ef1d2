"""What runs a detection model's tensors: the one part of the detector a device may swap.

A person detector (``models/detector.py``) is three steps: the frame made into the
model's input tensor (letterbox, normalise: the model's own rule), the network run
on it, and its outputs read back as boxes (decode, non-maximum suppression). Only the
middle one depends on what executes the network, so it is the backend's
(``InferenceBackend``): give it a float tensor ``[1, 3, H, W]``, it gives the model's
outputs. ONNX Runtime on the CPU is the one shipped (``OnnxRuntimeBackend``); another
runtime (OpenVINO, an accelerator's) is another class with the same three members,
and the detector's pre- and post-processing, the model checks and the tests stay
the same for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnxruntime as ort

from models.detections import FloatArray


class BackendError(Exception):
    """The model cannot be loaded or run by this backend (one line: what and why)."""


class InferenceBackend(Protocol):
    """A loaded network: its input's dimensions and a run from a tensor to its outputs."""

    @property
    def input_dims(self) -> tuple[Any, ...]:
        """The input tensor's dimensions as the file declares them (``[1, 3, H, W]``; a
        dynamic one is a name or None)."""
        ...

    @property
    def input_type(self) -> str:
        """The input's element type as ONNX names it (``tensor(float)``)."""
        ...

    def run(self, blob: FloatArray) -> list[np.ndarray]:
        """The model's outputs for one input tensor (raises on a tensor it cannot take)."""
        ...


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class OnnxRuntimeBackend:
    """The model run by ONNX Runtime on the CPU, ``threads`` per inference (None: its own
    choice), its worker threads asleep between inferences."""

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        opts = ort.SessionOptions()
        if threads is not None:
            opts.intra_op_num_threads = int(threads)
        opts.log_severity_level = 3  # ORT warnings go to stderr unasked; errors still raise
        # Detection runs a few times a second, not back to back: spinning worker threads
        # after each run burned ~40 ms of CPU per frame for ~4 ms less latency, which a
        # Raspberry Pi cannot spare.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        try:
            self._session: Any = ort.InferenceSession(
                str(path), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise BackendError(f"cannot load ONNX model {path}: {one_line(exc)}") from None
        inputs = self._session.get_inputs()
        if len(inputs) != 1:
            got = [(i.name, i.shape, i.type) for i in inputs]
            raise BackendError(f"{path}: expected one float input [1,3,H,W], got {got}")
        self._input_name: str = inputs[0].name
        self._input = inputs[0]
        self._out_names: list[str] = [o.name for o in self._session.get_outputs()]

    @property
    def input_dims(self) -> tuple[Any, ...]:
        return tuple(self._input.shape)

    @property
    def input_type(self) -> str:
        return str(self._input.type)

    @property
    def intra_op_threads(self) -> int:
        """Threads one inference may use, as the session was set up (0: the runtime's own)."""
        return int(self._session.get_session_options().intra_op_num_threads)

    def run(self, blob: FloatArray) -> list[np.ndarray]:
        return list(self._session.run(self._out_names, {self._input_name: blob}))


__all__ = ["BackendError", "InferenceBackend", "OnnxRuntimeBackend", "one_line"]
