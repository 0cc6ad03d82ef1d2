"""Write the example configuration: every setting, commented, with its meaning and default.

    python scripts/example_config.py > scripts/lookout.example.toml

It is made from the settings' own descriptions (``device.config.sections``; a test
checks that the checked-in file is what this prints), so no setting is ever missing
from it. Settings are shown in their sections; a flat file (``detect_fps = 5`` at the
top, or under ``[lookout]``) still means the same.
Only ``loop`` is set: a service replaying the sample video (no ``source``)
must not end after 80 s, or ``Restart=on-failure`` would leave it stopped;
a camera source ignores it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from device.config import SECTIONS, SETTINGS, env_name, flag_name

HEADER = """\
# Lookout configuration: /etc/lookout/lookout.toml (or lookout run --config FILE).
#
# Settings are grouped in sections ([source], [perception], ...); a key may also
# be written flat, at the top of the file, as before sections. Every setting is
# also a `lookout run` flag (--the-name) and, but lines and zones, an environment
# variable (LOOKOUT_THE_NAME): variables win over this file, flags over both.
# Keys may be written with - or _. Secrets (GEMINI_API_KEY, GOOGLE_API_KEY)
# never go here: put them in /etc/lookout/lookout.env (mode 600), which the
# service reads. `lookout run --help` says the same as the comments below.
"""
ACTIVE = {"loop": True}
EXAMPLES: dict[str, Any] = {
    "source": "0",
    "model": "local",
    "duration": 3600,
    "events": "/var/lib/lookout/events.jsonl",
    "db": "/var/lib/lookout/events.sqlite",
    "detector": "/opt/models/yolo11n.onnx",
    "emit": "text",
    "budget_tokens": 200000,
    "budget_session": 2000000,
    "system_instruction": "You watch the shop entrance.",
    "device_id": "entrance",
    "http_token": "put-a-long-random-token-here",
    "http_token_file": "/etc/lookout/http-token",
    "token_file": "/run/lookout/gemini-token",
    "token_url": "https://provisioner.example/lookout/token",
    "http_hosts": "entrance.example.com",
    "mqtt": "mqtt://broker.local:1883",
}


# Tables, so they go after the sections (TOML puts every key after a table in it).
TABLES = {
    "lines": """\
# [lines.door]        # in = from the left-hand side of first->second point to its right
# points = [[0.56, 0.73], [0.56, 0.21]]
""",
    "zones": """\
# [zones.kiosk]
# points = [[0.1, 0.5], [0.4, 0.5], [0.4, 0.95], [0.1, 0.95]]
# dwell = 20          # seconds; else the dwell setting above
""",
    "cameras": """\
# Several cameras on one device, one detector serving them all: each camera takes
# the settings above as its defaults and overrides them value by value (a camera
# sets its source, how it is read, detect_fps, threshold, the motion gate, its
# lines, zones, dwell and anchor, and privacy; the detector is the device's).
# Without [cameras] the device has one camera, "main", made of the settings above.
# Flags: --source door=rtsp://... --source till=1 --line door:post=...
#
# [cameras.door]
# source = "rtsp://door.local/stream"
# [cameras.door.lines.post]
# points = [[0.56, 0.73], [0.56, 0.21]]
#
# [cameras.till]
# source = "1"
# detect_fps = 5
# privacy = true
""",
}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def render() -> str:
    parts = [HEADER]
    for key, section in SECTIONS.items():
        parts.append(f"\n[{key}]\n")
        defaults = section.model_construct()
        for name, field in section.model_fields.items():
            if name not in SETTINGS:
                continue  # a secret: the environment only
            parts.append(_setting(name, field, defaults))
    for table in TABLES.values():
        parts.append(f"\n{table}")
    return "".join(parts)


def _setting(name: str, field: Any, defaults: Any) -> str:
    unset = (
        (field.json_schema_extra or {}).get("unset")
        if isinstance(field.json_schema_extra, dict)
        else None
    )
    default = getattr(defaults, name, None) if field.default_factory is None else None
    shown = f"default: {unset}" if unset else f"default: {toml_value(default)}"
    where = f"flag {flag_name(name)}"
    if name not in TABLES:
        where += f", {env_name(name)}"
    comment = textwrap.fill(
        f"{field.description} ({shown}; {where})",
        width=78,
        initial_indent="# ",
        subsequent_indent="# ",
    )
    if name in TABLES:
        line = f"# {name} = {{}}  (written as [{name}.NAME] tables: see the end of this file)"
    elif name in ACTIVE:
        line = f"{name} = {toml_value(ACTIVE[name])}"
    else:
        value = EXAMPLES.get(name, default)
        line = f"# {name} = {toml_value(value)}" if value is not None else f"# {name} ="
    return f"\n{comment}\n{line}\n"


if __name__ == "__main__":
    sys.stdout.write(render())
