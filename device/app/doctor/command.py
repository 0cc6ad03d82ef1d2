"""``lookout doctor``: check what a run needs and say plainly what is wrong."""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from device.config import COMMAND_LINE, Config, ConfigError, apply, value_of

if TYPE_CHECKING:
    from models.gemini.tokens import TokenSource
    from models.gemini.vertex import VertexTarget

OK, WARN, FAIL = "ok", "warn", "FAIL"
DOCTOR_TIMED_RUNS = 3  # after one warm-up; the median is reported


def _line(status: str, what: str, detail: str) -> None:
    from live.util.printable import printable
    from live.util.redact import strip_credentials

    # A detail is often an exception's text, which may quote a URL with its password.
    print(f"[{status:>4}] {what:<14} {printable(strip_credentials(detail))}")


def _check_source(spec: str | None) -> str:
    from device.app.parts import sample_video
    from device.sources import SourceError, open_source

    if spec is None:
        video = sample_video()
        if video is None:
            _line(
                FAIL,
                "source",
                "no --source and no sample video (python3 scripts/fetch_sample_data.py)",
            )
            return FAIL
        spec = str(video)
    try:
        source = open_source(spec, clock_now=lambda: 0.0)
    except SourceError as exc:
        _line(FAIL, "source", str(exc))
        return FAIL
    result: dict[str, object] = {}

    def probe() -> None:
        try:
            source.open()
            result["frame"] = source.read()
        except Exception as exc:
            result["error"] = exc
        finally:
            source.close()

    # A dead network camera can block for a long time; do not hang the doctor.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(15)
    if thread.is_alive():
        _line(FAIL, "source", f"{source.name}: no frame within 15 s")
        return FAIL
    if "error" in result:
        _line(FAIL, "source", str(result["error"]))
        return FAIL
    frame = result.get("frame")
    if frame is None:
        _line(FAIL, "source", f"{source.name}: opened but gave no frame")
        return FAIL
    height, width = frame.image.shape[:2]  # type: ignore[attr-defined]
    _line(OK, "source", f"{source.name}: {width}x{height}")
    return OK


def _expected_sha(readme: Path, name: str) -> str | None:
    """The ``File sha256`` row of the README's ``## <name>`` section."""
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(name)}\b.*?(?=^## |\Z)", text, re.M | re.S)
    match = section and re.search(r"File sha256\s*\|\s*`([0-9a-f]{64})`", section.group(0))
    return match.group(1) if match else None


def _check_detector(
    path: Path | None, precision: str = "auto", backend: str = "auto", threads: int = 1
) -> str:
    import numpy as np

    from device.config.detector.choice import detector_choice
    from models.detector import DetectorError, sha256_file

    try:
        # Measured afresh (and remembered for the runs): how the detector runs here.
        choice = detector_choice(backend, precision, path, threads or None, fresh=True)
    except ValueError as exc:  # --backend openvino without OpenVINO
        _line(FAIL, "detector", str(exc))
        return FAIL
    variant = choice.variant
    model_path = variant.model(path)
    status = OK
    if path is None:
        expected = _expected_sha(model_path.parent / "README.md", model_path.name)
        if not model_path.is_file():
            _line(FAIL, "detector", f"model file missing: {model_path}")
            return FAIL
        actual = sha256_file(model_path)
        if expected and actual != expected:
            _line(
                FAIL,
                "detector",
                f"{model_path.name}: sha256 {actual[:12]}… does not match models/README.md",
            )
            return FAIL
    from device.config.detector.profiles import CPU_BUDGET
    from device.config.values import DETECT_FPS

    frame = np.zeros((480, 640, 3), dtype=np.uint8)
    try:
        detector = variant.detector(path, threads=1)  # as lookout run detects
        detector.detect(frame)  # the first run allocates: not what a detection costs
        runs = []
        for _ in range(DOCTOR_TIMED_RUNS):
            detector.detect(frame)
            t = detector.last_timing
            runs.append(t.preprocess_ms + t.inference_ms + t.decode_ms)
    except DetectorError as exc:
        _line(FAIL, "detector", str(exc))
        return FAIL
    ms = sorted(runs)[len(runs) // 2]
    share = ms * DETECT_FPS / 1000
    arithmetic = getattr(detector.backend, "arithmetic", "")
    on = f"{variant.backend}" + (f", {arithmetic} arithmetic" if arithmetic else "")
    detail = (
        f"{model_path.name} ({detector.kind}) loads ({on}); a detection takes {ms:.0f} ms "
        f"here (one thread): the default {DETECT_FPS:g} a second is {share:.0%} of a core"
    )
    if share > CPU_BUDGET:
        # The device still works, but busier than a Pi should be: say what fits.
        status = WARN
        detail += " (over a quarter: --profile auto, --precision int8 or a lower --detect-fps)"
    _line(status, "detector", detail)
    if len(choice.measured) > 1:
        # The table auto chose from, this machine's: what each way of running costs here.
        _line(
            OK,
            "backends",
            f"measured here for --backend {backend} --precision {precision} (* the run's):",
        )
        for row in choice.measured:
            print(f"{'':22}{'* ' if row.variant == variant else '  '}{row.describe()}")
        for why in choice.left_out:
            print(f"{'':24}{why}")
    return status


def _check_runtime() -> str:
    import onnxruntime

    from models.cpu import read_cpu

    providers = onnxruntime.get_available_providers()
    _line(OK, "onnxruntime", f"{onnxruntime.__version__}, providers: {', '.join(providers)}")
    from models.openvino_backend import openvino_available, openvino_version

    version = openvino_version()
    if version is None:
        _line(OK, "openvino", f"not used: {openvino_available()}")
    else:
        _line(OK, "openvino", f"{version} (--backend openvino)")
    cpu = read_cpu()
    _line(OK, "cpu", f"{cpu.describe().removeprefix('CPU: ')}; {cpu.for_the_detector()}")
    return OK


def _check_token(model: str, tokens: TokenSource, now: dt.datetime | None = None) -> str:
    """The token run would connect with, read but not spent: a handshake would use one of
    its uses, and a one-use token spent here would leave ``lookout run`` refused until the
    file is renewed. Its times, where the file gives them, are checked against this
    device's clock (which may be wrong: said as such)."""
    import anyio

    from models.gemini.tokens import TokenUnavailable

    try:
        token = anyio.run(tokens.details)
    except TokenUnavailable as exc:
        _line(FAIL, "model", f"{model}: {exc}")
        return FAIL
    now = now or dt.datetime.now(dt.UTC)
    where = f"{model}: a token from {tokens.describe()}"

    def at(when: dt.datetime) -> str:
        return f"{when.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"

    if token.expires is not None and token.expires <= now:
        _line(FAIL, "model", f"{where} expired at {at(token.expires)} (by this device's clock)")
        return FAIL
    if token.new_sessions_until is not None and token.new_sessions_until <= now:
        _line(
            FAIL,
            "model",
            f"{where} may no longer open a session: new sessions until "
            f"{at(token.new_sessions_until)} (by this device's clock)",
        )
        return FAIL
    if token.expires is None:
        lasts = "its expiry is not in it (lookout token --json writes it)"
    else:
        left = int((token.expires - now).total_seconds() // 60)
        lasts = f"expires {at(token.expires)} (in {left} min)"
        if token.new_sessions_until is not None:
            lasts += f", new sessions until {at(token.new_sessions_until)}"
    uses = "" if token.uses is None else f", {token.uses} use{'s' if token.uses != 1 else ''}"
    _line(
        OK,
        "model",
        f"{where}, {lasts}{uses}; not tried: a handshake spends a use (--spend-token tries one)",
    )
    return OK


def _check_model(model: str | None, config: Config, spend_token: bool = False) -> str:
    from device.config.checks import api_key_from_env
    from device.config.model import DEFAULT_GEMINI_MODEL
    from models.gemini.vertex import VertexError, vertex_from_env

    key = api_key_from_env()
    if model == "local":
        _line(OK, "model", "local (offline)")
        return OK
    tokens: TokenSource | None = None
    if config.model.token_file is not None or config.model.token_url is not None:
        # Loads google-genai: only for a device given tokens.
        from models.gemini.tokens import token_source

        tokens = token_source(config.model.token_file, config.model.token_url)
    if tokens is not None:
        if spend_token:
            # What run would do: a token from the file or the URL, no key (one use is spent).
            return _check_gemini(model or DEFAULT_GEMINI_MODEL, None, tokens=tokens)
        return _check_token(model or DEFAULT_GEMINI_MODEL, tokens)
    try:
        vertex = vertex_from_env()
    except VertexError as exc:
        _line(FAIL, "model", str(exc))
        return FAIL
    if vertex is not None:
        return _check_gemini(model or DEFAULT_GEMINI_MODEL, None, vertex=vertex)
    if key:
        return _check_gemini(model or DEFAULT_GEMINI_MODEL, key)
    if model:
        _line(FAIL, "model", f"{model} needs GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment")
        return FAIL
    _line(WARN, "model", "no GEMINI_API_KEY: lookout run will use the local offline model")
    return WARN


def _check_gemini(
    model: str,
    key: str | None,
    timeout_s: float = 10.0,
    *,
    vertex: VertexTarget | None = None,
    tokens: TokenSource | None = None,
) -> str:
    """One short setup handshake with the Live service (the Gemini API with ``key``, or
    Vertex AI): what it answered, not "all good"."""
    import anyio

    from live.model import ConnectionLost, LiveSetup, ModelSetupError
    from live.util.redact import redact
    from models.gemini.model import GeminiLiveModel, GeminiOptions
    from models.gemini.vertex import VertexError

    secrets = [key] if key else []

    async def handshake() -> str:
        live = GeminiLiveModel(
            GeminiOptions(model=model), api_key=key, vertex=vertex, tokens=tokens
        )
        secrets.extend(live.secrets)
        with anyio.fail_after(timeout_s):
            conn = await live.connect(LiveSetup())
        await conn.close()
        return "setup accepted"

    try:
        answer = anyio.run(handshake)
    except VertexError as exc:
        _line(FAIL, "model", f"{model}: {exc}")
        return FAIL
    except TimeoutError:
        _line(FAIL, "model", f"{model}: no answer to the setup within {timeout_s:g} s")
        return FAIL
    except ModelSetupError as exc:
        _line(FAIL, "model", redact(f"{model}: refused: {exc}", secrets))
        return FAIL
    except ConnectionLost as exc:
        _line(FAIL, "model", redact(f"{model}: unreachable: {exc.reason}", secrets))
        return FAIL
    except Exception as exc:  # a doctor reports what it found, whatever it was
        _line(FAIL, "model", redact(f"{model}: {type(exc).__name__}: {exc}", secrets))
        return FAIL
    if tokens is not None:
        where = f"an ephemeral token from {tokens.describe()}, one use spent"
    elif vertex is not None:
        where = f"Vertex AI, project {vertex.project}, location {vertex.location}"
    else:
        where = f"API key of {len(key or '')} characters"
    _line(OK, "model", f"{model}: {answer} ({where})")
    return OK


def _check_audio(mic: str | None, speaker: str | None) -> list[str]:
    """Sound devices are listed (a finding, never a failure unless one is asked for);
    a given --mic or --speaker must be usable; offline speech needs espeak-ng."""
    from device.audio.devices import doctor_lines, resolve
    from device.audio.open import is_file
    from device.audio.ports import AudioError
    from device.audio.tts import Espeak

    results = [OK]
    for warning, line in doctor_lines():
        _line(WARN if warning else OK, "audio", line)
        results.append(WARN if warning else OK)
    for spec, kind in ((mic, "input"), (speaker, "output")):
        if spec is None:
            continue
        flag = "--mic" if kind == "input" else "--speaker"
        try:
            if is_file(spec):
                _check_audio_file(spec, kind)
            else:
                device = resolve(spec, "input" if kind == "input" else "output")
                _line(OK, "audio", f"{flag} {spec}: {device.label()}")
                continue
        except AudioError as exc:
            why = str(exc).removeprefix(f"{spec}: ")  # a file's error names it
            _line(FAIL, "audio", f"{flag} {spec}: {why}")
            results.append(FAIL)
            continue
        _line(OK, "audio", f"{flag} {spec}: usable")
    if Espeak().available():
        _line(OK, "speech", "espeak-ng: the local model can speak its sentences")
    else:
        _line(WARN, "speech", "no espeak-ng: offline, sentences are printed, not spoken "
              "(Debian: apt install espeak-ng)")  # fmt: skip
        results.append(WARN)
    return results


def _check_audio_file(spec: str, kind: str) -> None:
    from device.audio.ports import MIC_RATE, AudioError

    if kind == "input":
        from device.audio.wav_mic import read_wav

        read_wav(Path(spec), MIC_RATE)
    elif not Path(spec).expanduser().resolve().parent.is_dir():
        raise AudioError(f"no folder {Path(spec).parent} to write it in")


def _configured(args: argparse.Namespace, flags: dict[str, object]) -> tuple[Config, str | None]:
    """What lookout run would be given: the config file (``--config``, else
    /etc/lookout's), the ``LOOKOUT_`` variables and the flags; and why the file is wrong."""
    from device.config.layers import stacked

    try:
        config, _ = stacked(flags, config_path=args.config)
    except ConfigError as exc:
        return apply(Config(), flags, COMMAND_LINE), str(exc)
    return config, None


def doctor(args: argparse.Namespace, flags: dict[str, object] | None = None) -> int:
    from device.app.doctor.outputs import check_outputs

    results = []
    config, problem = _configured(args, flags or {})
    if problem is not None:
        _line(FAIL, "config", problem)
        results.append(FAIL)
    elif args.config is not None:
        _line(OK, "config", str(args.config))
        results.append(OK)
    setting = functools.partial(value_of, config)
    results.append(_check_source(setting("source")))
    results.append(
        _check_detector(
            setting("detector"),
            setting("precision"),
            setting("backend"),
            setting("detector_threads"),
        )
    )
    results.append(_check_runtime())
    results.append(_check_model(setting("model"), config, getattr(args, "spend_token", False)))
    results.extend(_check_audio(setting("mic"), setting("speaker")))
    results.extend(check_outputs(config, _line))
    failed, warned = results.count(FAIL), results.count(WARN)
    if failed:
        print(f"{failed} problem(s) found" + (f", {warned} warning(s)" if warned else ""))
    elif warned:
        print(f"no problem found; {warned} warning(s) above ([warn])")
    else:
        print("all good")
    return 1 if failed else 0
