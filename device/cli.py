"""The ``lookout`` command line: run, count, doctor, report."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2 (its default code)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"lookout: {message} (see {self.prog} --help)\n")


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run the live agent (default: sample video, local model)")
    p.add_argument(
        "--source", help="camera index (0), video file, image folder, RTSP/HTTP URL, or picam"
    )
    p.add_argument(
        "--model",
        help="local, or a Gemini Live model name (default: gemini-3.8-live when an API key is set, else local)",
    )
    p.add_argument(
        "--fps", type=float, help="frames per second sampled for the model lane (default 1)"
    )
    p.add_argument(
        "--detect-fps", type=float, help="frames per second count_people looks at (default 2)"
    )
    p.add_argument(
        "--send-frames",
        action="store_true",
        default=None,
        help="also send frames to the model (at most --fps, <= --max-side px)",
    )
    p.add_argument(
        "--privacy", action="store_true", default=None, help="no image ever leaves the device"
    )
    p.add_argument(
        "--pace",
        choices=["realtime", "fast"],
        help="file replay: by timestamps or as fast as possible",
    )
    p.add_argument("--loop", action="store_true", default=None, help="replay a file forever")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    p.add_argument("--events", type=Path, help="write events as JSON lines to this file")
    p.add_argument("--db", type=Path, help="record events in this SQLite file")
    p.add_argument("--threshold", type=float, help="detector score threshold (default 0.45)")
    p.add_argument(
        "--detector", type=Path, help="ONNX person detector (default: the shipped NanoDet-g 416)"
    )
    p.add_argument(
        "--max-side", type=int, help="resize frames to at most this many pixels (default 768)"
    )
    p.add_argument("--jpeg-quality", type=int, help="JPEG quality 1-100 (default 80)")
    p.add_argument(
        "--emit", choices=["function_response", "text"], help="how tool results reach the model"
    )
    p.add_argument(
        "--scheduling",
        choices=["silent", "when_idle", "interrupt"],
        help="when the model reacts to a count change (default when_idle)",
    )
    p.add_argument("--folder-fps", type=float, help="frame rate of an image folder source (default 1)")
    p.add_argument("--stall-timeout", type=float, help="seconds without a frame before a camera is reopened (default 5)")
    p.add_argument(
        "--min-hold",
        type=float,
        help="seconds a new count must hold before it is reported (default 1)",
    )
    p.add_argument("--device-id", help="name of this device (MQTT topics, status page)")
    p.add_argument("--http", help="status server address HOST:PORT (default 127.0.0.1:8765)")
    p.add_argument("--no-http", action="store_true", help="no status server")
    p.add_argument(
        "--http-token", help="bearer token required by the status server (all routes but /healthz)"
    )
    p.add_argument("--mqtt", help="publish to an MQTT broker, mqtt://host:port")
    p.add_argument(
        "--config",
        type=Path,
        help="TOML config file (default /etc/lookout/lookout.toml if present)",
    )
    p.add_argument(
        "--stdin",
        action="store_true",
        help="read commands (count, stop, start, quit) from stdin even when it is not a terminal",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _add_count(sub: Any) -> None:
    p = sub.add_parser("count", help="run the person detector over a video, image or folder")
    p.add_argument("source", help="video file, image, or image folder")
    p.add_argument("--every", type=int, default=1, help="process every Nth frame (default 1)")
    p.add_argument("--threshold", type=float, default=0.45)
    p.add_argument("--detector", type=Path, help="ONNX person detector path")
    p.add_argument("--fps", type=float, default=1.0, help="frame rate of an image folder")
    p.add_argument("--json", action="store_true", help="one JSON object per processed frame")


def _add_ask(sub: Any) -> None:
    p = sub.add_parser(
        "ask",
        help="ask one question (how many people now, an occupancy report, a report's counts)",
    )
    p.add_argument("question", help='e.g. "how many people?" or "report for 5 minutes"')
    p.add_argument("--source", help="camera index (0), video file, image folder, RTSP/HTTP URL, or picam")
    p.add_argument("--model", help="local, or a Gemini model name (default: gemini-3.8-flash when an API key is set, else local)")
    p.add_argument("--pace", choices=["realtime", "fast"], help="file replay: by timestamps (default) or as fast as possible")
    p.add_argument("--loop", action="store_true", default=None, help="replay a file forever")
    p.add_argument("--events", type=Path, help="write events (with job progress) as JSON lines to this file")
    p.add_argument("--db", type=Path, help="record events, jobs and per-minute counts in this SQLite file")
    p.add_argument("--threshold", type=float, help="detector score threshold (default 0.45)")
    p.add_argument("--detector", type=Path, help="ONNX person detector (default: the shipped NanoDet-g 416)")
    p.add_argument("--folder-fps", type=float, help="frame rate of an image folder source (default 1)")
    p.add_argument("--report-fps", type=float, default=1.0, help="frames per second an occupancy report looks at (default 1)")
    p.add_argument("--period", type=float, default=60.0, help="seconds per row of a report's counts (default 60: per minute)")
    p.add_argument("--page-size", type=int, default=10, help="rows per page of fetch_counts (default 10)")
    p.add_argument("--no-wait", action="store_true", help="do not wait for a long-running job (it is cancelled)")
    p.add_argument("--config", type=Path, help="TOML config file (default /etc/lookout/lookout.toml if present)")
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check camera/source, model file, runtime, API key")
    p.add_argument("--source")
    p.add_argument("--model")
    p.add_argument("--detector", type=Path)
    p.add_argument("--config", type=Path)


def _add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="chart and figures of a recorded run")
    p.add_argument("input", type=Path, help="events file: JSON lines (--events) or SQLite (--db)")
    p.add_argument("--out", type=Path, required=True, help="report.html or report.png")


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
    print(f"lookout: {message}", file=sys.stderr)
    return code


RUN_FLAGS = (
    "source", "model", "fps", "detect_fps", "send_frames", "privacy", "pace", "loop", "duration",
    "events", "db", "threshold", "detector", "max_side", "jpeg_quality", "emit", "scheduling",
    "min_hold", "device_id", "http", "http_token", "mqtt", "folder_fps", "stall_timeout",
)  # fmt: skip


def _quiet_native_logs(verbose: bool) -> None:
    # OpenCV and FFmpeg print a line per failed camera attempt; a device retrying a
    # dead camera forever would fill its journal. Source states are events already.
    if not verbose:
        os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
        os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")


def _set_up_logging(verbose: bool, quiet: dict[str, int]) -> None:
    """Log to stderr; without -v the ``quiet`` loggers only from the level given."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
    import anyio

    from device.app import App
    from device.config import ConfigError, build
    from device.sources import SourceError

    flags = {name: getattr(args, name) for name in RUN_FLAGS}
    if args.no_http:
        flags["http"] = ""
    try:
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    # The console already reports source and connection states as events.
    _set_up_logging(
        args.verbose, {"lookout.source": logging.ERROR, "lookout.session": logging.ERROR}
    )
    try:
        app = App(config, read_stdin=args.stdin or sys.stdin.isatty())
    except SourceError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    from device.operations import attach_operations

    try:
        attach_operations(app)
    except ConfigError as exc:
        return _fail(str(exc))
    try:
        code = anyio.run(app.run)
    except KeyboardInterrupt:
        code = EXIT_OK
    return _exit_now_if_threads_linger(code)


ASK_FLAGS = (
    "source", "model", "pace", "loop", "events", "db", "threshold", "detector", "folder_fps",
)  # fmt: skip


def cmd_ask(args: argparse.Namespace) -> int:
    _quiet_native_logs(args.verbose)
    import anyio

    from device.ask import AskApp, AskOptions
    from device.config import ConfigError, build
    from device.sources import SourceError
    from models.gemini import MissingApiKey

    if not args.question.strip():
        return _fail("the question is empty")
    if args.report_fps <= 0 or args.period <= 0:
        return _fail("--report-fps and --period must be positive")
    if args.page_size < 1:
        return _fail("--page-size must be at least 1")
    # Without --model, device.ask.model_name picks ask's default (not the Live one).
    flags = {name: getattr(args, name) for name in ASK_FLAGS}
    try:
        config = build(flags, config_path=args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    # Errors reach the console as events already; the log would say them twice.
    _set_up_logging(
        args.verbose, {"lookout.source": logging.CRITICAL, "lookout.turns": logging.CRITICAL,
                       "lookout.tool": logging.CRITICAL},
    )  # fmt: skip
    options = AskOptions(
        question=args.question,
        wait=not args.no_wait,
        sample_fps=args.report_fps,
        period_s=args.period,
        page_size=args.page_size,
    )
    try:
        app = AskApp(config, options)
    except (SourceError, MissingApiKey) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    try:
        code = anyio.run(app.run)
    except KeyboardInterrupt:
        code = EXIT_FAILURE
    return _exit_now_if_threads_linger(code)


def cmd_count(args: argparse.Namespace) -> int:
    from device.sources import SourceError, open_source
    from models.detector import DetectorError, PersonDetector
    from tools.smoothing import CountSmoother

    if args.every < 1:
        return _fail("--every must be at least 1")
    if not 0 < args.threshold < 1:
        return _fail("--threshold must be between 0 and 1")
    try:
        source = open_source(args.source, clock_now=lambda: 0.0, folder_fps=args.fps)
        detector = PersonDetector(args.detector, threshold=args.threshold)
        source.open()
    except (SourceError, DetectorError) as exc:
        return _fail(str(exc))
    smoother = CountSmoother()
    index = 0
    try:
        while True:
            try:
                frame = source.read()
            except SourceError as exc:
                print(f"lookout: skipped frame {index}: {exc}", file=sys.stderr)
                index += 1
                continue
            if frame is None:
                break
            index = frame.index + 1
            if frame.index % args.every:
                continue
            detections = detector.detect(frame.image)
            raw = len(detections)
            smoother.update(raw, frame.t)
            boxes = [
                [round(float(v), 1) for v in box] + [round(float(score), 3)]
                for box, score in zip(detections.boxes, detections.scores, strict=True)
            ]
            record = {
                "frame": frame.index,
                "t": round(frame.t, 3),
                "raw": raw,
                "count": smoother.reported,
                "boxes": boxes,
            }
            if args.json:
                print(json.dumps(record, separators=(",", ":")), flush=True)
            else:
                print(
                    f"frame {frame.index:6d}  t={frame.t:8.2f}s  raw={raw:3d}  count={smoother.reported}"
                )
    except BrokenPipeError:
        return EXIT_OK
    finally:
        source.close()
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from device.doctor import doctor

    return doctor(args)


def cmd_report(args: argparse.Namespace) -> int:
    from device.report import ReportError, make_report

    try:
        summary = make_report(args.input, args.out)
    except ReportError as exc:
        return _fail(str(exc))
    mean = summary["mean_occupancy"]
    print(
        f"wrote {args.out}: max {summary['max_count']} people, "
        f"mean occupancy {'-' if mean is None else f'{mean:.2f}'}, {summary['changes']} changes"
    )
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
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
