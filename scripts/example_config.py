"""Write the example configuration: every setting, commented, with its meaning and default.

    python scripts/example_config.py > scripts/lookout.example.toml

It is made from ``device.config.Config`` itself (a test checks that the
checked-in file is what this prints), so no setting is ever missing from it.
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

from device.config import SETTINGS, Config, flag_name

HEADER = """\
# Lookout configuration: /etc/lookout/lookout.toml (or lookout run --config FILE).
#
# Every setting is also a `lookout run` flag (--the-name); flags win over this
# file. Keys may be written with - or _. Secrets (GEMINI_API_KEY, GOOGLE_API_KEY)
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
    "system_instruction": "You watch the shop entrance.",
    "device_id": "entrance",
    "http_token": "put-a-long-random-token-here",
    "http_token_file": "/etc/lookout/http-token",
    "http_hosts": "entrance.example.com",
    "mqtt": "mqtt://broker.local:1883",
}


# Tables, so they go after the [lookout] keys (TOML puts every key after a table in it).
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
}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def render() -> str:
    defaults = Config.model_construct()
    parts = [HEADER, "[lookout]\n"]
    for name in SETTINGS:
        field = Config.model_fields[name]
        unset = (
            (field.json_schema_extra or {}).get("unset")
            if isinstance(field.json_schema_extra, dict)
            else None
        )
        default = getattr(defaults, name, None) if field.default_factory is None else None
        shown = f"default: {unset}" if unset else f"default: {toml_value(default)}"
        comment = textwrap.fill(
            f"{field.description} ({shown}; flag {flag_name(name)})",
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
        parts.append(f"\n{comment}\n{line}\n")
    for table in TABLES.values():
        parts.append(f"\n{table}")
    return "".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
