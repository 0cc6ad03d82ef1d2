"""A real Prometheus for the fleet tests: Debian's ``prometheus`` run as a process on a free
loopback port with a temporary store, the shipped configuration (``scripts/fleet``) made
local (paths into the test's folder, a 1 s scrape and rule interval), and PromQL over its
HTTP API."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.ops.support import free_port, wait_until

FLEET = Path(__file__).resolve().parents[2] / "scripts" / "fleet"


def prometheus_path() -> Path | None:
    found = shutil.which("prometheus")
    return Path(found) if found else None


def promtool_path() -> Path | None:
    found = shutil.which("promtool")
    return Path(found) if found else None


def local_config(folder: Path, token_file: Path, interval: str = "1s") -> Path:
    """The shipped prometheus.yml with its paths in ``folder`` and a fast interval; the
    rules are the shipped file itself."""
    text = (FLEET / "prometheus.yml").read_text()
    text = text.replace("/etc/prometheus/lookout-token", str(token_file))
    text = text.replace("/etc/prometheus/lookout-targets*.json", str(folder / "targets*.json"))
    text = text.replace("refresh_interval: 1m", "refresh_interval: 1s")
    text = re.sub(r"(scrape_interval|evaluation_interval): 15s", rf"\1: {interval}", text)
    text = text.replace("  - lookout-rules.yml", f"  - {FLEET / 'lookout-rules.yml'}")
    config = folder / "prometheus.yml"
    config.write_text(text)
    return config


class Prometheus:
    def __init__(self, executable: Path, config: Path, folder: Path) -> None:
        self.port = free_port()
        self.log = folder / "prometheus.log"
        self.args = [
            str(executable),
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=log)
        wait_until(self._ready, 30, "prometheus to be ready")

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.loads(answer.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant vector (raises on a query Prometheus refuses)."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        return list(data["result"])

    def label_values(self, query: str) -> list[str]:
        """Grafana's ``label_values(selector, label)`` as Prometheus answers it."""
        found = re.fullmatch(r"label_values\((.*), *(\w+)\)", query)
        assert found, query
        selector, label = found.groups()
        return list(self.api(f"label/{label}/values", **{"match[]": selector}))


def dashboard_queries(dashboard: dict[str, Any], values: dict[str, str]) -> list[str]:
    """Every panel's PromQL with the template variables set (``$site`` -> ``values['site']``)."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in values.items():
                expr = expr.replace(f"${name}", value)
            assert "$" not in expr, expr
            out.append(expr)
    return out
