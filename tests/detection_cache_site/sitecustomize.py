"""On the PYTHONPATH of a ``lookout`` started inside ``tests.detection_cache.remembered``:
its detector answers the frames this test session has seen from the session's folder.
Does nothing unless $LOOKOUT_TEST_DETECTIONS names that folder; either way the
sitecustomize this one hides (Debian's, say) still runs."""

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent

if os.environ.get("LOOKOUT_TEST_DETECTIONS"):
    _spec = importlib.util.spec_from_file_location(
        "lookout_test_detection_cache", _HERE.parent / "detection_cache.py"
    )
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _module.install_on_import()

_rest = [p for p in sys.path if p and Path(p).resolve() != _HERE]
_hidden = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _hidden is not None and _hidden.loader is not None and _hidden.origin is not None:
    _hidden.loader.exec_module(importlib.util.module_from_spec(_hidden))
