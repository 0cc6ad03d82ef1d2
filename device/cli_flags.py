"""The ``lookout`` command line's flags: run, ask, count, doctor, report.

The flags of run, ask and doctor are generated from the settings of device.config (and
AskFlags), so names, help and validation have one source; run's --help groups them by
the config file's sections. What each command does with them is ``device/cli.py``.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from device.config import FIELDS, SECTION_OF, SETTINGS, SYSTEM_CONFIG, flag_name
from device.config.explain import base_type, choices, value_range
from device.config.model import DEFAULT_GEMINI_MODEL
from device.config.values import MAX_FPS

EXIT_USAGE = 2  # what the user typed cannot be run: one line, never a traceback


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2 (its default code),
    naming the command whose help to read and the flag or command most like a mistyped one."""

    def error(self, message: str) -> Any:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice is not None:
            names = re.findall(r"'([^']*)'", choice.group(2))
            message += _did_you_mean(choice.group(1), names)
        self.exit(EXIT_USAGE, f"lookout: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        self._unknown_first(argv)
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            # Said by the command that does not know them, with its own help to read.
            command = self._command(getattr(parsed, "command", None)) or self
            flag = next((e for e in extras if e.startswith("-")), extras[0])
            known = [o for a in command._actions for o in a.option_strings]
            others = [e for e in extras if e.startswith("-") and e != flag]
            command.error(
                f"unrecognized argument {flag.split('=')[0]}"
                + _did_you_mean(flag.split("=")[0], known)
                + (f" (and {', '.join(others)})" if others else "")
            )
        return parsed

    def _unknown_first(self, argv: list[str]) -> None:
        """A mistyped flag is said before argparse says what is missing because of it
        (``--outt r.html`` is not "--out is required")."""
        command = self._command(argv[0]) if argv else None
        if command is None:
            return
        known = [o for a in command._actions for o in a.option_strings]
        flags = [t.split("=")[0] for t in argv[1:] if t.startswith("--") and t != "--"]
        unknown = [f for f in flags if not any(k.startswith(f) for k in known)]
        if unknown:
            others = unknown[1:]
            command.error(
                f"unrecognized argument {unknown[0]}"
                + _did_you_mean(unknown[0], known)
                + (f" (and {', '.join(others)})" if others else "")
            )

    def _command(self, name: str | None) -> _Parser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                found = action.choices[name]
                return found if isinstance(found, _Parser) else None
        return None


def _did_you_mean(given: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


# The settings each command takes as flags; their types, defaults and help come from Config.
RUN_SETTINGS: tuple[str, ...] = SETTINGS
# What perception is made of: ask and count take these as run does, so that the three
# commands count a recording's frames the same way.
PERCEPTION_SETTINGS = (
    "threshold", "detector", "precision", "backend", "profile", "detector_threads", "detect_fps",
    "motion",
    "motion_threshold", "motion_heartbeat", "motion_hangover", "motion_pixel_delta",
    "max_side", "folder_fps", "max_image_pixels", "timelapse", "lines", "zones", "dwell",
    "anchor",
)  # fmt: skip
ASK_SETTINGS = ("source", "model", "pace", "loop", "events", "db", *PERCEPTION_SETTINGS)
COUNT_SETTINGS = PERCEPTION_SETTINGS
DOCTOR_SETTINGS = (
    "source", "model", "detector", "precision", "backend", "detector_threads", "mic", "speaker",
    "token_file", "token_url",
)  # fmt: skip


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
REPEATED = {
    "lines": "[CAMERA:]NAME=X1,Y1,X2,Y2",
    "zones": "[CAMERA:]NAME=X1,Y1,X2,Y2,X3,Y3[,...]",
    "source": "[CAMERA=]SOURCE",
}


def _add_settings(parser: argparse.ArgumentParser, names: Sequence[str]) -> None:
    """One flag per setting, in a group per section of the config file."""
    groups: dict[str, Any] = {}
    for name in names:
        section = SECTION_OF[name]
        if section not in groups:
            groups[section] = parser.add_argument_group(f"{section} ([{section}] in the file)")
        _add_fields(groups[section], FIELDS, [name])


def _add_fields(parser: Any, fields: Mapping[str, FieldInfo], names: Sequence[str]) -> None:
    """One flag per field. Values stay strings (None: not given) for the model to validate,
    so that a bad value gets the model's message and "not given" is never a default."""
    for name in names:
        field = fields[name]
        # The bounds too: a user reads what a value may be before typing one, not after.
        bounds = value_range(field)
        text = f"{field.description} ({bounds + '; ' if bounds else ''}default: "
        text += f"{_default_text(field)})"
        options: dict[str, Any] = {"default": None, "help": text.replace("%", "%%")}
        kind = base_type(field)
        if name in REPEATED:
            options["action"] = "append"
            options["metavar"] = REPEATED[name]
            options["dest"] = name
        elif kind is bool:
            options["action"] = "store_true"
        elif isinstance(field.json_schema_extra, dict) and "flag_const" in field.json_schema_extra:
            # A flag whose value may be left out (``--mic`` alone: the default microphone).
            options["nargs"] = "?"
            options["const"] = field.json_schema_extra["flag_const"]
            options["metavar"] = field.json_schema_extra.get("flag_metavar", "DEVICE|FILE.wav")
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
    _add_settings(p, RUN_SETTINGS)
    # --model-fps was --fps, which read as the detector's rate: the old flag still works, said.
    p.add_argument("--fps", metavar="N", help=argparse.SUPPRESS)
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
        "--camera",
        metavar="NAME",
        help="with a configuration of several cameras: count as this camera does (its "
        "lines, zones and rates; default: the first camera)",
    )
    p.add_argument(
        "--every",
        type=int,
        metavar="N",
        help="look at every Nth frame (default: the frames lookout run looks at, --detect-fps)",
    )
    _add_settings(p, COUNT_SETTINGS)
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
    _add_settings(p, ASK_SETTINGS)
    _add_fields(p, AskFlags.model_fields, tuple(AskFlags.model_fields))
    _add_config(p)
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check camera/source, model file, runtime, API key")
    _add_settings(p, DOCTOR_SETTINGS)
    p.add_argument("--spend-token", action="store_true",
                   help="with --token-file/--token-url: shake hands as run would, "
                   "spending one use of the token (by default it is only read)")  # fmt: skip
    _add_config(p)


def _add_token(sub: Any) -> None:
    p = sub.add_parser(
        "token",
        help="mint an ephemeral Gemini token with the API key here, for a device without it "
        "(lookout run --token-file/--token-url); prints only the token",
    )
    p.add_argument("--model", default=DEFAULT_GEMINI_MODEL, help="the Live model it is for "
                   f"(default {DEFAULT_GEMINI_MODEL})")  # fmt: skip
    p.add_argument("--uses", type=int, default=1, metavar="N",
                   help="new sessions it may open (default 1; resuming is not a use)")  # fmt: skip
    p.add_argument("--expire", default="30m", metavar="DURATION",
                   help="how long it lasts: 90s, 30m, 2h (default 30m, at most 20h)")  # fmt: skip
    p.add_argument("--new-session-expire", default="60s", metavar="DURATION",
                   help="how long it may open new sessions (default 60s)")  # fmt: skip
    p.add_argument("--lock-config", action="store_true",
                   help="also lock Lookout's session settings (modalities, media resolution, "
                   "compression), not only the model")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="print the token's name, expiry and uses as JSON (what --token-file "
                   "reads; lookout doctor then says how long it lasts)")  # fmt: skip
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write that JSON into FILE whole (a device re-reading it never meets "
                   "half a token), owner-readable only; prints nothing")  # fmt: skip


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
    p.add_argument(
        "--snapshots",
        type=Path,
        metavar="DIR",
        help="the folder of the run's pictures (default: the --snapshots folder the run "
        "logged); the HTML shows the latest pictured events as thumbnails",
    )
    p.add_argument(
        "--camera",
        metavar="NAME",
        help="only this camera of a log of several (default: each camera, and the totals of all)",
    )


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("lookout")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def parser() -> argparse.ArgumentParser:
    root = _Parser(prog="lookout", description="Lookout: an edge vision agent.")
    root.add_argument("--version", action="version", version=f"lookout {_version()}")
    sub = root.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    _add_count(sub)
    _add_ask(sub)
    _add_doctor(sub)
    _add_token(sub)
    _add_report(sub)
    return root
