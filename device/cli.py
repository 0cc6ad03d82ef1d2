"""The ``lookout`` command line: run, ask, count, doctor, report.

The flags of run, ask and doctor are generated from the fields of device.config.Config
(and AskFlags), so names, help and validation have one source.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from device.app.config import (
    COMMAND_LINE,
    MAX_FPS,
    SETTINGS,
    SYSTEM_CONFIG,
    Config,
    ConfigError,
    apply,
    base_type,
    build,
    choices,
    flag_name,
    parse_flags,
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2 (its default code)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"lookout: {message} (see {self.prog} --help)\n")


# The settings each command takes as flags; their types, defaults and help come from Config.
RUN_SETTINGS: tuple[str, ...] = SETTINGS
# What perception is made of: ask and count take these as run does, so that the three
# commands count a recording's frames the same way.
PERCEPTION_SETTINGS = (
    "threshold", "detector", "precision", "profile", "detector_threads", "detect_fps", "motion",
    "motion_threshold", "motion_heartbeat", "motion_hangover", "motion_pixel_delta",
    "max_side", "folder_fps", "max_image_pixels", "timelapse", "lines", "zones", "dwell",
    "anchor",
)  # fmt: skip
ASK_SETTINGS = ("source", "model", "pace", "loop", "events", "db", *PERCEPTION_SETTINGS)
COUNT_SETTINGS = PERCEPTION_SETTINGS
DOCTOR_SETTINGS = ("source", "model", "detector", "precision")


class AskFlags(BaseModel):
    """``lookout ask``'s own options (not settings: no config file key)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    report_fps: float | None = Field(
        default=None,
        gt=0,
        le=MAX_FPS,
        description="frames per second an occupancy report looks at",
        json_schema_extra={"unset": "the detection rate of lookout run (--detect-fps)"},
    )
    period: float = Field(
        default=60.0, gt=0, le=86400, description="seconds per row of a report's counts"
    )
    page_size: int = Field(default=10, ge=1, le=1000, description="rows per page of fetch_counts")
    no_wait: bool = Field(
        default=False, description="do not wait for a long-running job (it is cancelled)"
    )


def _default_text(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "unset" in extra:
        return str(extra["unset"])
    default = field.default
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float):
        return f"{default:g}"
    return "none" if default is None else str(default)


_METAVARS: dict[Any, str] = {int: "N", float: "N", Path: "PATH"}
REPEATED = {"lines": "NAME=X1,Y1,X2,Y2", "zones": "NAME=X1,Y1,X2,Y2,X3,Y3[,...]"}


def _add_fields(
    parser: argparse.ArgumentParser, model: type[BaseModel], names: Sequence[str]
) -> None:
    """One flag per field. Values stay strings (None: not given) for the model to validate,
    so that a bad value gets the model's message and "not given" is never a default."""
    for name in names:
        field = model.model_fields[name]
        text = f"{field.description} (default: {_default_text(field)})"
        options: dict[str, Any] = {"default": None, "help": text.replace("%", "%%")}
        kind = base_type(field)
        if name in REPEATED:
            options["action"] = "append"
            options["metavar"] = REPEATED[name]
            options["dest"] = name
        elif kind is bool:
            options["action"] = "store_true"
        elif allowed := choices(field):
            options["choices"] = allowed
        elif kind in _METAVARS:
            options["metavar"] = _METAVARS[kind]
        parser.add_argument(flag_name(name), **options)


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help=f"TOML config file (default {SYSTEM_CONFIG} if present)",
    )


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run the live agent (default: sample video, local model)")
    _add_fields(p, Config, RUN_SETTINGS)
    p.add_argument("--no-http", action="store_true", help="no status server (same as --http '')")
    _add_config(p)
    p.add_argument(
        "--stdin",
        action="store_true",
        help="read commands (count, stop, start, quit) from stdin even when it is not a terminal",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _add_count(sub: Any) -> None:
    p = sub.add_parser(
        "count", help="count people in a video, image or folder, frame by frame, as run does"
    )
    p.add_argument("source", help="video file, image, or image folder")
    p.add_argument(
        "--every",
        type=int,
        metavar="N",
        help="look at every Nth frame (default: the frames lookout run looks at, --detect-fps)",
    )
    _add_fields(p, Config, COUNT_SETTINGS)
    # Before --folder-fps was a setting, count called it --fps; old scripts keep working.
    p.add_argument("--fps", type=str, dest="legacy_fps", metavar="N", help=argparse.SUPPRESS)
    _add_config(p)
    p.add_argument("--json", action="store_true", help="one JSON object per frame looked at")


def _add_ask(sub: Any) -> None:
    p = sub.add_parser(
        "ask",
        help="ask one question (how many people now, an occupancy report, a report's counts)",
    )
    p.add_argument("question", help='e.g. "how many people?" or "report for 5 minutes"')
    _add_fields(p, Config, ASK_SETTINGS)
    _add_fields(p, AskFlags, tuple(AskFlags.model_fields))
    _add_config(p)
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check camera/source, model file, runtime, API key")
    _add_fields(p, Config, DOCTOR_SETTINGS)
    _add_config(p)


def _add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="chart and figures of a recorded run")
    p.add_argument("input", type=Path, help="events file: JSON lines (--events) or SQLite (--db)")
    p.add_argument("--out", type=Path, required=True, help="report.html or report.png")
    p.add_argument(
        "--run", help="only this run of the log: its id (or the start of it) or its number from 1"
    )
    p.add_argument(
        "--period",
        type=float,
        metavar="SECONDS",
        help="seconds per row of the lines' and zones' tables (default: at most 24 rows)",
    )


def parser() -> argparse.ArgumentParser:
    root = _Parser(prog="lookout", description="Lookout: an edge vision agent.")
    sub = root.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    _add_count(sub)
    _add_ask(sub)
    _add_doctor(sub)
    _add_report(sub)
    return root


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    from live.printable import printable
    from live.redact import strip_credentials

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


def _set_up_logging(verbose: bool, quiet: dict[str, int]) -> None:
    """Log to stderr; without -v the ``quiet`` loggers only from the level given."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT, stream=sys.stderr
    )
    from device.log_limit import RepeatFilter
    from live.redact import SafeFormatter

    for handler in logging.getLogger().handlers:
        handler.addFilter(RepeatFilter())
        if type(handler) is logging.StreamHandler:  # ours, not a test's capturing one
            handler.setFormatter(SafeFormatter(LOG_FORMAT))
    if not verbose:
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)


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
    if args.no_http:
        flags["http"] = ""
    try:
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    if config.profile != "none":
        from device.app.profiles import profile_choice

        # What the profile chose (and, for auto, what it measured): said once at start,
        # with what the file or the flags set over it.
        chosen, why = profile_choice(config.profile, scene=bool(config.lines or config.zones))
        effective = {"precision": config.precision, "detect_fps": config.detection_fps()}
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

    from device.app.run import App
    from device.sources import SourceError

    # The console already reports source and connection states as events.
    _set_up_logging(
        args.verbose,
        {
            "lookout.source": logging.ERROR,
            "lookout.session": logging.ERROR,
            "lookout.connection": logging.CRITICAL,  # each attempt is a console line already
            "lookout.perception": logging.ERROR,  # detector failures are error events
            "lookout.store": logging.ERROR,  # log problems are console warnings
        },
    )
    from device.app.operations import attach_operations

    try:
        app = App(config, read_stdin=args.stdin or sys.stdin.isatty())
        # Everything the user caused is found now, before the first frame: one line, exit 2.
        app.preflight()
        attach_operations(app)
        if not app.perception.linked:
            print(unlinked_note(app.perception.photos, config.detection_fps()))
    except (ConfigError, SourceError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    try:
        code = anyio.run(app.run)
    except KeyboardInterrupt:
        code = EXIT_OK
    return _exit_now_if_threads_linger(code)


def unlinked_note(photos: bool, detect_fps: float) -> str:
    """The run's first word on a count that cannot follow people from frame to frame."""
    if photos:
        return "an image folder: each photo is counted on its own (--timelapse for one scene)"
    from device.tracker import TrackerConfig

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

    from device.app.ask import AskApp, AskOptions
    from device.sources import SourceError
    from models.gemini.model import MissingApiKey

    # Errors reach the console as events already; the log would say them twice.
    _set_up_logging(
        args.verbose, {"lookout.source": logging.CRITICAL, "lookout.turns": logging.CRITICAL,
                       "lookout.tool": logging.CRITICAL},
    )  # fmt: skip
    options = AskOptions(
        question=args.question,
        wait=not extras.no_wait,
        sample_fps=extras.report_fps,
        period_s=extras.period,
        page_size=extras.page_size,
    )
    try:
        app = AskApp(config, options)
        app.preflight()
    except (SourceError, MissingApiKey, ConfigError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
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
    flags["source"] = args.source
    try:
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    import anyio

    from device.app.count import count_frames
    from device.app.run import configured_perception, configured_source, load_detector
    from device.sources import SourceError, check_decodable
    from live.clock import MonotonicClock

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
                max_side=config.max_side,
                as_json=args.json,
            )
        )
    finally:
        source.close()


def cmd_doctor(args: argparse.Namespace) -> int:
    from device.app.doctor import doctor

    # Only the values are checked here (build would refuse a missing detector file,
    # which is for the doctor to report).
    flags = {name: getattr(args, name) for name in DOCTOR_SETTINGS}
    try:
        checked = apply(Config(), {k: v for k, v in flags.items() if v is not None}, COMMAND_LINE)
    except ConfigError as exc:
        return _fail(str(exc))
    for name in DOCTOR_SETTINGS:
        setattr(args, name, getattr(checked, name))
    return doctor(args)


def cmd_report(args: argparse.Namespace) -> int:
    from device.app.report import ReportError, make_report

    try:
        summary = make_report(args.input, args.out, run=args.run, period_s=args.period)
    except ReportError as exc:
        return _fail(str(exc))
    runs = f"{summary['runs']} runs, " if summary["runs"] > 1 else ""
    if not summary["count_reports"]:
        # A log of questions (lookout ask) or of a source that never ran has no count.
        print(f"wrote {args.out}: {runs}no count in this log ({summary['events']} events)")
        return EXIT_OK
    mean = summary["mean_occupancy"]
    axis = {"media": "of media", "wall": "", "session": ""}.get(summary["axis"], "")
    print(
        f"wrote {args.out}: {runs}max {summary['max_count']} people, "
        f"mean occupancy {'-' if mean is None else f'{mean:.2f}'} over "
        f"{summary['observed_s']:.1f} s {axis}".rstrip()
        + f", {summary['changes']} changes"
        + _scene_summary(summary)
    )
    return EXIT_OK


def _scene_summary(summary: dict[str, Any]) -> str:
    """``; line post 3 in 8 out; zone left max 3`` for the report's one line."""
    parts = [
        f"line {name} {totals['in']} in {totals['out']} out"
        for name, totals in summary.get("lines", {}).items()
    ]
    parts += [
        f"zone {name} max {figures['max_people']}"
        + (f" ({figures['dwell_events']} dwells)" if figures.get("dwell_events") else "")
        for name, figures in summary.get("zones", {}).items()
        if figures.get("max_people") is not None
    ]
    return "".join(f"; {part}" for part in parts)


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
        "report": cmd_report,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
