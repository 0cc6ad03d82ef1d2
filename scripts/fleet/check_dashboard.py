"""Ask Prometheus every query of the fleet dashboard, as Grafana would with its variables at
All, and say how many series each answers (docs/fleet.md, 4): the dashboard's queries checked
without Grafana. Standard library only.

    python3 scripts/fleet/check_dashboard.py http://localhost:9090
    python3 scripts/fleet/check_dashboard.py http://localhost:9090 --device shop-door

Exit 0 when Prometheus takes every query (a query with no data yet is said: rates need two
scrapes, a zones panel needs a zone), 1 when it refuses one (the metric names are checked
by tests/ops/test_fleet.py against real devices).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parent / "lookout-fleet-dashboard.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prometheus", help="its address, e.g. http://localhost:9090")
    for name in ("site", "device", "camera"):
        parser.add_argument(f"--{name}", default=".*", help=f"the ${name} variable (All)")
    parser.add_argument("--dashboard", type=Path, default=DASHBOARD)
    args = parser.parse_args()
    dashboard = json.loads(args.dashboard.read_text())
    values = {"site": args.site, "device": args.device, "camera": args.camera}
    empty = refused = 0
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in values.items():
                expr = expr.replace(f"${name}", value)
            url = f"{args.prometheus.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode(
                {"query": expr}
            )
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    found = json.loads(answer.read())["data"]["result"]
            except urllib.error.HTTPError as exc:
                refused += 1
                print(f" refused     {panel['title']}: {expr}: {exc.read().decode()}")
                continue
            empty += not found
            print(f"{len(found):4d} series  {panel['title']}: {expr}")
    print(f"{refused} queries refused, {empty} with no data yet, the others answer")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
