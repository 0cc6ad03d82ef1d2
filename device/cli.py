"""The ``lookout`` command line: run, ask, count, doctor, report.

Their flags are made in ``device/cli_flags.py``; here each command is carried
out, and what a user got wrong becomes one line and exit 2.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from device.cli_flags import (
    ASK_SETTINGS,
    COUNT_SETTINGS,
    DOCTOR_SETTINGS,
    EXIT_USAGE,
    RUN_SETTINGS,
    AskFlags,
    parser,
)
from device.config import (
    COMMAND_LINE,
    Config,
    ConfigError,
    apply,
    build,
    parse_flags,
)

if TYPE_CHECKING:
    from device.outputs.console_log import ConsoleLogs

EXIT_OK, EXIT_FAILURE = 0, 1


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    from live.util.printable import printable
    from live.util.redact import strip_credentials

    # An exception's text may quote what the user typed: a URL with its password.
    print(f"lookout: {printable(strip_credentials(message))}", file=sys.stderr)
    return code


def _quiet_native_logs(verbose: bool) -> None:
    # OpenCV and FFmpeg print a line per failed camera attempt; a device retrying a
    # dead camera forever would fill its journal. Source states are events already.
    if not verbose:
        os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
        os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _set_up_logging(
    log_level: str, verbose: bool, quiet: dict[str, int], console: ConsoleLogs | None = None
) -> None:
    """Log to stderr: Lookout's own loggers (``lookout.*``) from ``log_level`` (-v: at
    least info), other libraries' from warning (-v: info). At warning and above, the
    ``quiet`` loggers (whose news the console says already, as events) only from their
    own level; asked for more (info, debug, -v), they say everything. ``console``: the
    run's warnings become console lines once it is attached (``ConsoleLogs``)."""
    level = logging.getLevelNamesMapping()[log_level.upper()]
    if verbose:
        level = min(level, logging.INFO)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT, stream=sys.stderr
    )
    from device.log_limit import RepeatFilter
    from live.util.redact import SafeFormatter

    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # ours, not a test's capturing one
            # Not on a capturing handler (pytest reuses its own for every test): a filter
            # left on it would hold back the next test's records.
            handler.addFilter(RepeatFilter())
            handler.setFormatter(SafeFormatter(LOG_FORMAT))
            if console is not None:
                # After the repeat filter: what it holds back is not said either.
                console.keep_on_stderr = level < logging.WARNING
                handler.addFilter(console)
    logging.getLogger("lookout").setLevel(level)
    for name, quiet_level in quiet.items():
        logging.getLogger(name).setLevel(
            logging.NOTSET if level < logging.WARNING else max(quiet_level, level)
        )


def _exit_now_if_threads_linger(code: int) -> int:
    """Leave promptly even if a worker thread is stuck in a camera read.

    Such a thread is abandoned (its capture is released when the read returns),
    but Python would wait for it at exit, up to the stream's read timeout. Logs
    and sinks are closed by now, so exiting is safe and keeps the 2-second promise.
    """
    import threading

    lingering = [
        t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon
    ]
    if lingering:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def cmd_run(args: argparse.Namespace) -> int:
    _quiet_native_logs(args.verbose)
    flags = {name: getattr(args, name) for name in RUN_SETTINGS}
    flags["fps"] = args.fps  # the old name of --model-fps: taken, with a warning
    if args.no_http:
        flags["http"] = ""
    try:
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    from device.config.detector.choice import config_choice

    # How the detector runs here, and why: the run's first line (measured once a machine;
    # a model that cannot run at all is the preflight's to say, below).
    detector = config_choice(config)
    if detector.runs:
        print(detector.line())
    if config.perception.profile != "none":
        from device.config.detector.profiles import profile_choice

        # What the profile chose (and, for auto, what it measured): said once at start,
        # with what the file or the flags set over it.
        chosen, why = profile_choice(
            config.perception.profile, scene=config.has_scene, backend=config.perception.backend
        )
        effective = {"precision": config.perception.precision, "detect_fps": config.detection_fps()}
        kept = [
            f"{name.replace('_', '-')} {effective[name]:g}"
            if isinstance(effective[name], float)
            else f"{name.replace('_', '-')} {effective[name]}"
            for name, value in chosen.items()
            if name in effective and effective[name] != value
        ]
        print(why + (f" (set explicitly instead: {', '.join(kept)})" if kept else ""))
    # Imported once the settings are known good: a typo is refused at once, not after
    # a second of loading OpenCV, onnxruntime and the Gemini SDK.
    import anyio

    from device.app.cost import projected_line
    from device.app.wiring import build_app
    from device.outputs.console_log import ConsoleLogs
    from device.sources import SourceError

    # The console already reports source and connection states as events; other warnings
    # become its lines too (``console_logs``), not log lines in another format.
    console_logs = ConsoleLogs()
    _set_up_logging(
        config.device.log_level,
        args.verbose,
        {
            "lookout.source": logging.ERROR,
            "lookout.session": logging.ERROR,
            "lookout.connection": logging.CRITICAL,  # each attempt is a console line already
            "lookout.perception": logging.ERROR,  # detector failures are error events
            "lookout.store": logging.ERROR,  # log problems are console warnings
        },
        console_logs,
    )
    from device.files.made import Made

    # What the start makes (the logs, the snapshots folder) is undone if the run does not
    # begin: refused, or interrupted while starting.
    made = Made.before([config.outputs.events, config.outputs.db, config.outputs.snapshots])
    try:
        # Everything the user caused is found now, before the first frame: one line, exit 2
        # (``check``: the detector and the source before the outputs bind their ports).
        app = build_app(
            config,
            read_stdin=args.stdin or sys.stdin.isatty(),
            check=True,
            console_logs=console_logs,
        )
        made.kept = lambda: app.began  # once the run begins, what it made is its log
        if not app.perception.linked:
            print(unlinked_note(app.perception.photos, config.detection_fps()))
        cost = projected_line(config)  # a Gemini model: what it may cost, before it does
        if cost is not None:
            print(cost)
    except (ConfigError, SourceError) as exc:
        console_logs.detach()  # refused: what is logged from here on is the log's
        made.undo()
        return _fail(str(exc))
    except OSError as exc:
        console_logs.detach()
        made.undo()
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    except KeyboardInterrupt:
        console_logs.detach()
        made.undo()
        raise
    try:
        code = anyio.run(app.run)
    except KeyboardInterrupt:
        if not app.began:  # before the run's own handlers: nothing of it happened
            made.undo()
            raise
        code = EXIT_OK
    return _exit_now_if_threads_linger(code)


def unlinked_note(photos: bool, detect_fps: float) -> str:
    """The run's first word on a count that cannot follow people from frame to frame."""
    if photos:
        return "an image folder: each photo is counted on its own (--timelapse for one scene)"
    from device.vision.tracker import TrackerConfig

    return (
        f"at {detect_fps:g} detections a second people cannot be followed from one to the "
        f"next (at most {TrackerConfig.max_lost_s:g} s apart): the count is each detection's own"
    )


def cmd_ask(args: argparse.Namespace) -> int:
    _quiet_native_logs(args.verbose)
    if not args.question.strip():
        return _fail("the question is empty")
    # Without --model, device.ask.model_name picks ask's default (not the Live one).
    flags = {name: getattr(args, name) for name in ASK_SETTINGS}
    try:
        extras = parse_flags(
            AskFlags, {name: getattr(args, name) for name in AskFlags.model_fields}
        )
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    import anyio  # after the settings, as in cmd_run

    from device.app.ask.command import AskApp, AskOptions
    from device.sources import SourceError
    from models.gemini.keys import MissingApiKey

    # Errors reach the console as events already; the log would say them twice.
    _set_up_logging(
        config.device.log_level, args.verbose, {"lookout.source": logging.CRITICAL, "lookout.turns": logging.CRITICAL,
                       "lookout.tool": logging.CRITICAL},
    )  # fmt: skip
    options = AskOptions(
        question=args.question,
        wait=not extras.no_wait,
        sample_fps=extras.report_fps,
        period_s=extras.period,
        page_size=extras.page_size,
    )
    from device.files.made import Made

    made = Made.before([config.outputs.db])  # the report store, undone if refused
    try:
        app = AskApp(config, options)
        app.preflight()
    except (SourceError, MissingApiKey, ConfigError) as exc:
        made.undo()
        return _fail(str(exc))
    except OSError as exc:
        made.undo()
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    except KeyboardInterrupt:
        made.undo()
        raise
    try:
        code = anyio.run(app.run)
    except KeyboardInterrupt:
        code = EXIT_FAILURE
    return _exit_now_if_threads_linger(code)


def cmd_count(args: argparse.Namespace) -> int:
    if args.every is not None and args.every < 1:
        return _fail("--every must be at least 1")
    flags = {name: getattr(args, name) for name in COUNT_SETTINGS}
    if args.legacy_fps is not None and flags["folder_fps"] is None:
        flags["folder_fps"] = args.legacy_fps
    try:
        config = build(flags, config_path=args.config)
        # A configuration of several cameras: the lines, zones and rates of the one named
        # (the first by default), on the video given.
        config = config.camera(args.camera or config.camera_names[0])
        config = config.model_copy(update={"source": args.source})
    except ConfigError as exc:
        return _fail(str(exc))
    import anyio

    from device.app.count import count_frames
    from device.app.parts import configured_perception, configured_source, load_detector
    from device.sources import SourceError, check_decodable
    from live.util.clock import MonotonicClock

    try:
        source = configured_source(config, MonotonicClock())
        check_decodable(source)  # a text file is not a video: said now, in one line
        rate = config.detection_fps()
        if args.every is not None and source.fps:
            rate = source.fps / args.every  # the frames looked at are this far apart
        perception = configured_perception(config, rate, source)
        load_detector(perception)
        source.open()  # from its first frame again
    except (SourceError, ConfigError) as exc:
        return _fail(str(exc))
    try:
        return anyio.run(
            functools.partial(
                count_frames,
                source,
                perception,
                every=args.every,
                max_side=config.source.max_side,
                as_json=args.json,
            )
        )
    finally:
        source.close()


def cmd_doctor(args: argparse.Namespace) -> int:
    from device.app.doctor.command import doctor

    # A mistyped flag is the user's (exit 2); the config file, the world (a missing
    # detector, a dead broker) are for the doctor to report.
    flags = {name: getattr(args, name) for name in DOCTOR_SETTINGS}
    given = {k: v for k, v in flags.items() if v is not None}
    try:
        apply(Config(), given, COMMAND_LINE)
    except ConfigError as exc:
        return _fail(str(exc))
    return doctor(args, given)


def cmd_token(args: argparse.Namespace) -> int:
    from device.app.token import TokenRequest, TokenRequestError, issue, parse_duration
    from models.gemini.client import MissingApiKey

    try:
        request = TokenRequest(
            model=args.model,
            uses=args.uses,
            expire_s=parse_duration(args.expire, "--expire"),
            new_session_expire_s=parse_duration(args.new_session_expire, "--new-session-expire"),
            lock_config=args.lock_config,
        )
        text = issue(request, args.out, as_json=args.json)
    except (TokenRequestError, MissingApiKey) as exc:
        return _fail(str(exc))
    except RuntimeError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    if text:
        print(text)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from device.app.report.cameras import report_line
    from device.app.report.command import ReportError, make_report

    try:
        summary = make_report(
            args.input,
            args.out,
            run=args.run,
            period_s=args.period,
            snapshots=args.snapshots,
            camera=args.camera,
        )
    except ReportError as exc:
        return _fail(str(exc))
    print(f"wrote {args.out}: {report_line(summary)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if not getattr(args, "verbose", False):
        # OpenCV and FFmpeg write to stderr themselves ("[tcp @ 0x...] Connection refused"
        # at every camera retry); the source's state already says it, once per change.
        # Read when cv2 loads, so set before anything imports it.
        os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
        os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
    commands = {
        "run": cmd_run,
        "count": cmd_count,
        "ask": cmd_ask,
        "doctor": cmd_doctor,
        "token": cmd_token,
        "report": cmd_report,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
