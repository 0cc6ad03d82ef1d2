"""On the PYTHONPATH of a ``lookout`` started inside ``tests.detection_cache.remembered``:
its detector answers the frames this test session has seen from the session's folder.
Does nothing unless $LOOKOUT_TEST_DETECTIONS names that folder."""

import importlib.util
import os
from pathlib import Path

if os.environ.get("LOOKOUT_TEST_DETECTIONS"):
    _spec = importlib.util.spec_from_file_location(
        "lookout_test_detection_cache",
        Path(__file__).resolve().parent.parent / "detection_cache.py",
    )
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _module.install_on_import()
