"""The detector's backends and precisions, the accuracy rule and ``auto``'s choice, on the
shipped check set (models/check/) and on this machine's CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from models import accuracy, choice
from models.accuracy import check_set, judge
from models.choice import Choice, Measured, choose, pick
from models.detections import Detections
from models.detector import DEFAULT_MODEL_PATH, PersonDetector
from models.openvino_backend import openvino_available
from models.variants import Variant, candidates, reference_for

OPENVINO = openvino_available()
needs_openvino = pytest.mark.skipif(OPENVINO is not None, reason=str(OPENVINO))


@pytest.fixture(scope="module")
def reference() -> PersonDetector:
    return Variant("onnxruntime", "fp32").detector(threshold=accuracy.REPORT_SCORE)


def test_the_stored_reference_is_what_onnxruntime_fp32_finds_here(
    reference: PersonDetector,
) -> None:
    """The check set's reference was made on another machine: here it must hold too."""
    verdict = judge(reference.detect)
    assert verdict.passed and verdict.counts_changed == 0 and verdict.lost == 0
    assert verdict.score_shift_p95 < 1e-3
    assert verdict.images == 29 and verdict.boxes > 150  # every image scored
    people = sum(
        sum(score >= accuracy.COUNT_SCORE for _, score in item.reference) for item in check_set()
    )
    assert people > 60  # a check set with people in it, at the default threshold


Detect = Callable[[np.ndarray], Detections]


def shifted(detect: Detect, by: float) -> Detect:
    def run(image: np.ndarray) -> Detections:
        found = detect(image)
        return Detections(found.boxes, np.clip(found.scores + by, 0, 1).astype(np.float32))

    return run


def test_the_rule_takes_rounding_and_refuses_a_variant_that_moves_scores_or_counts(
    reference: PersonDetector,
) -> None:
    rounding = judge(shifted(reference.detect, 0.004))
    assert rounding.passed, rounding
    reweighed = judge(shifted(reference.detect, -0.02))
    assert not reweighed.passed and "scores move by 0.020" in reweighed.failure()

    def one_fewer(image: np.ndarray) -> Detections:  # the best box gone on every image
        found = reference.detect(image)
        return Detections(found.boxes[1:], found.scores[1:])

    dropped = judge(one_fewer)
    assert not dropped.passed and "counts changed on" in dropped.failure()


def test_onnxruntime_int8_fails_the_rule_on_this_cpu() -> None:
    """int8 re-weighs: people near the threshold come and go (docs/benchmarks.md). So
    ``auto`` keeps fp32 wherever only onnxruntime is installed."""
    int8 = Variant("onnxruntime", "int8").detector(threshold=accuracy.REPORT_SCORE)
    verdict = judge(int8.detect)
    assert not verdict.passed, verdict
    rows = choice.measure([Variant("onnxruntime", "fp32"), Variant("onnxruntime", "int8")])
    assert pick(rows).variant == Variant("onnxruntime", "fp32")  # type: ignore[union-attr]


def test_the_reference_is_onnxruntime_at_the_precision_asked_for() -> None:
    both = [Variant("onnxruntime", "int8"), Variant("openvino", "int8")]
    assert reference_for(both) == Variant("onnxruntime", "int8")
    mixed = [Variant("openvino", "fp32"), Variant("onnxruntime", "int8")]
    assert reference_for(mixed) == Variant("onnxruntime", "fp32")
    found, left_out = candidates("onnxruntime", "auto", own=False)
    assert found == [Variant("onnxruntime", "fp32"), Variant("onnxruntime", "int8")]
    assert not left_out
    assert candidates("auto", "fp32", own=True)[0][0] == Variant("onnxruntime", "own")
    # fp32 by name is computed in fp32 (OpenVINO would otherwise take bf16 where it can).
    named, _ = candidates("auto", "fp32", own=False)
    assert all(v.exact for v in named) and not any(v.exact for v in found)


def row(backend: str, precision: str, ms: float | None, passed: bool | None) -> Measured:
    verdict = None
    if passed is not None:
        verdict = accuracy.Verdict(29, 160, 0.002 if passed else 0.05, 0, 0 if passed else 4, 1)
    return Measured(
        Variant(backend, precision),  # type: ignore[arg-type]
        ms,
        "fp32",
        verdict,
        "" if ms else "cannot load",
        reference=(backend, precision) == ("onnxruntime", "fp32"),
    )


def test_the_fastest_that_holds_the_rule_is_chosen_and_the_line_says_why() -> None:
    rows = [
        row("onnxruntime", "fp32", 22.0, None),
        row("onnxruntime", "int8", 16.0, False),
        row("openvino", "fp32", 6.0, True),
        row("openvino", "int8", 4.0, False),
    ]
    best = pick(rows)
    assert best is not None and best.variant == Variant("openvino", "fp32")
    line = Choice(best.variant, tuple(rows)).line()
    assert line.startswith("detector: openvino fp32 (fp32 arithmetic), 6.0 ms a detection here")
    assert "onnxruntime fp32 (the reference) 22.0" in line
    assert "openvino int8 (fails the accuracy rule) 4.0" in line
    assert "it holds the accuracy rule: scores within 0.002" in line
    # Faster, but within a tenth of the reference: not worth a second runtime.
    close = [row("onnxruntime", "fp32", 22.0, None), row("openvino", "fp32", 20.5, True)]
    assert pick(close).variant == Variant("onnxruntime", "fp32")  # type: ignore[union-attr]
    # Nothing faster passes: the reference, which needs no check.
    only = [row("onnxruntime", "fp32", 22.0, None), row("openvino", "fp32", None, None)]
    assert pick(only).variant == Variant("onnxruntime", "fp32")  # type: ignore[union-attr]
    said = Choice(Variant("onnxruntime", "fp32"), tuple(only), ("OpenVINO is not installed",))
    assert "openvino fp32 cannot run" in said.line()
    assert said.line().endswith("OpenVINO is not installed")


def test_the_choice_is_remembered_and_measured_again_when_what_it_depends_on_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered = tmp_path / "lookout" / "detector-choice.json"
    variants = [Variant("onnxruntime", "fp32"), Variant("onnxruntime", "int8")]
    first = choose(variants, remember=remembered)
    assert first.variant == Variant("onnxruntime", "fp32") and not first.measured_on
    assert json.loads(remembered.read_text())["rows"][0]["reference"] is True

    def must_not_measure(*args: object, **kwargs: object) -> list[Measured]:
        raise AssertionError("measured again although nothing changed")

    monkeypatch.setattr(choice, "measure", must_not_measure)
    again = choose(variants, remember=remembered)
    assert again.variant == first.variant and again.measured_on  # said when it was measured
    assert "lookout doctor measures again" in again.line()
    with pytest.raises(AssertionError, match="measured again"):
        choose(variants, remember=remembered, threads=2)  # another thread count: measured
    with pytest.raises(AssertionError, match="measured again"):
        choose(variants, remember=remembered, fresh=True)  # doctor
    remembered.write_text("{not json")
    with pytest.raises(AssertionError, match="measured again"):
        choose(variants, remember=remembered)  # a damaged file is measured again, silently


def test_a_candidate_that_cannot_load_is_left_out_saying_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    rows = choice.measure([Variant("onnxruntime", "own")], own=broken)
    assert rows[0].ms is None and "cannot load ONNX model" in rows[0].error


@needs_openvino
def test_openvino_runs_the_shipped_model_with_the_same_outputs_in_f32() -> None:
    from models.openvino_backend import OpenVinoBackend

    ort = PersonDetector(DEFAULT_MODEL_PATH, threshold=0.3, threads=1)
    ov = PersonDetector(
        DEFAULT_MODEL_PATH,
        threshold=0.3,
        backend=lambda path: OpenVinoBackend(path, threads=1, exact=True),
    )
    assert ov.kind == "nanodet" and ov.input_size == (416, 416)
    assert ov.backend.arithmetic == "fp32"  # type: ignore[attr-defined]
    for item in check_set()[:6]:
        a, b = ort.detect(item.image), ov.detect(item.image)
        assert len(a) == len(b)
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)
        np.testing.assert_allclose(a.boxes, b.boxes, atol=0.05)


@needs_openvino
def test_auto_keeps_openvino_only_where_it_holds_the_rule_and_is_faster() -> None:
    variants, left_out = candidates("auto", "auto", own=False)
    assert not left_out and len(variants) == 4
    made = choose(variants)
    rows = {m.variant: m for m in made.measured}
    chosen = rows[made.variant]
    assert chosen.usable
    for other in rows.values():
        if other.usable:
            assert (chosen.ms or 0) <= (other.ms or 0)
    if made.variant.backend == "openvino":
        assert chosen.verdict is not None and chosen.verdict.passed


def without_openvino(site: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """``lookout ARGS`` where ``import openvino`` fails, as on a machine without it."""
    fake = site / "openvino"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named openvino')\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from device.entry import main; "
        "sys.argv = ['lookout', *sys.argv[2:]]; sys.exit(main())"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(site), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )


def test_asking_for_openvino_where_it_is_not_installed_is_one_line_and_exit_2(
    tmp_path: Path,
) -> None:
    site, cache = tmp_path / "site", tmp_path / "cache"
    result = without_openvino(site, "run", "--backend", "openvino", "--duration", "1", cache=cache)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--backend openvino" in lines[0], result.stderr
    assert "pip install 'lookout[openvino]'" in lines[0]
    # At the defaults (auto) the same machine runs on onnxruntime alone, and says so.
    quick = ("--duration", "1", "--pace", "fast", "--no-http", "--model", "local")
    ran = without_openvino(site, "run", *quick, cache=cache)
    assert ran.returncode == 0, ran.stderr
    first = ran.stdout.splitlines()[0]
    assert first.startswith("detector: onnxruntime fp32 (fp32 arithmetic)"), first
    assert first.endswith("OpenVINO is not installed (pip install 'lookout[openvino]')")


def test_a_chosen_variant_that_fails_to_load_later_falls_back_to_the_reference_saying_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Measured fine once (remembered), failing now: the reference counts, said once."""
    from device.app import parts
    from device.config import Config
    from models import variants
    from models.backend import BackendError

    def broken(path: Path, **kwargs: object) -> None:
        raise BackendError("OpenVINO cannot load it: No space left on device")

    rows = (row("onnxruntime", "fp32", 22.0, None), row("openvino", "fp32", 6.0, True))
    made = Choice(Variant("openvino", "fp32"), rows)
    assert made.fallback == Variant("onnxruntime", "fp32")
    monkeypatch.setattr(parts, "config_choice", lambda config: made)
    monkeypatch.setattr(variants, "OpenVinoBackend", broken)
    with caplog.at_level("WARNING", logger="lookout.detector"):
        detector = parts.detector_factory(Config())()
    assert type(detector.backend).__name__ == "OnnxRuntimeBackend"
    assert detector.path == DEFAULT_MODEL_PATH
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "openvino fp32 cannot load now (OpenVINO cannot load it: No space left on device): "
        "onnxruntime fp32 instead"
    ]
    # Set by name, nothing to fall back to: the load's own error stands.
    assert (
        Choice(Variant("openvino", "fp32"), (Measured(Variant("openvino", "fp32")),)).fallback
        is None
    )


@needs_openvino
def test_loading_openvino_leaves_the_thread_s_signal_stack_as_it_was() -> None:
    """OpenVINO left the thread an alternate signal stack that did not stay valid: a
    Ctrl-C soon after crashed the interpreter (SIGSEGV) instead of stopping the start."""
    import ctypes

    from models.openvino_backend import OpenVinoBackend, _AltStack

    libc = ctypes.CDLL(None)

    def altstack() -> tuple[int | None, int]:
        now = _AltStack()
        assert libc.sigaltstack(None, ctypes.byref(now)) == 0
        return now.sp, now.flags

    before = altstack()
    backend = OpenVinoBackend(DEFAULT_MODEL_PATH, threads=1)
    backend.run(np.zeros((1, 3, 416, 416), np.float32))
    assert altstack() == before
