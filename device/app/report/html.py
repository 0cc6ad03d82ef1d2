"""``lookout report``'s HTML: one self-contained page, the chart embedded.

The figures, the lines' and zones' tables per period with their totals, the latest
pictured events, the model's messages and the streams. A log of several cameras has
each camera's figures, a camera column in the lines' and zones' tables, and the
device's totals (``report_cameras``); a log of one camera reads as it always did.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from device.app.report.cameras import camera_figures, device_figures
from device.app.report.chart import figure_lines, period_text
from device.app.report.data import Skipped, Timeline
from live.util.printable import printable

# Each camera's summary by its name; None: the one camera of a log that names none.
Named = Sequence[tuple[str | None, dict[str, Any]]]


def _cell(value: Any) -> str:
    return (
        "–"
        if value is None
        else html.escape(f"{value:.2f}" if isinstance(value, float) else str(value))
    )


def _camera_cell(name: str | None, tag: str = "td") -> str:
    return "" if name is None else f"<{tag}>{html.escape(name)}</{tag}>"


def _line_rows(name: str | None, summary: dict[str, Any]) -> list[str]:
    esc = html.escape
    return [
        f"<tr><td>{esc(p['label'])}</td>{_camera_cell(name)}<td>{esc(line)}</td>"
        f"<td>{counts['in']}</td><td>{counts['out']}</td></tr>"
        for p in summary.get("periods", [])
        for line, counts in p["lines"].items()
    ] + [
        f"<tr><th>total</th>{_camera_cell(name, 'th')}<th>{esc(line)}</th><th>{totals['in']}</th>"
        f"<th>{totals['out']}</th></tr>"
        for line, totals in summary["lines"].items()
    ]


def _zone_rows(name: str | None, summary: dict[str, Any]) -> list[str]:
    esc = html.escape
    return [
        f"<tr><td>{esc(p['label'])}</td>{_camera_cell(name)}<td>{esc(zone)}</td>"
        f"<td>{_cell(z['mean'])}</td><td>{_cell(z['max'])}</td>"
        f"<td>{z['dwell_events']}</td></tr>"
        for p in summary.get("periods", [])
        for zone, z in p["zones"].items()
    ] + [
        f"<tr><th>all</th>{_camera_cell(name, 'th')}<th>{esc(zone)}</th>"
        f"<th>{_cell(z['mean_people'])}</th><th>{_cell(z['max_people'])}</th>"
        f"<th>{z['dwell_events']}</th></tr>"
        for zone, z in summary["zones"].items()
    ]


def scene_tables(named: Named) -> str:
    """The per-period tables of lines and zones, with totals; nothing for a log without."""
    parts: list[str] = []
    period_s = next((float(s.get("period_s", 0.0)) for _, s in named if "period_s" in s), 0.0)
    period = html.escape(period_text(period_s))
    camera = "" if named and named[0][0] is None else "<th>camera</th>"
    lines = [row for name, s in named if s.get("lines") for row in _line_rows(name, s)]
    if lines:
        parts.append(
            f"<details><summary>Lines per {period} ({len(lines)} rows)</summary>\n"
            f'<table id="lines"><tr><th>period</th>{camera}'
            "<th>line</th><th>in</th><th>out</th></tr>\n" + "\n".join(lines) + "</table></details>"
        )
    zones = [row for name, s in named if s.get("zones") for row in _zone_rows(name, s)]
    if zones:
        parts.append(
            f"<details><summary>Zones per {period} ({len(zones)} rows)</summary>\n"
            f'<table id="zones"><tr><th>period</th>{camera}'
            "<th>zone</th><th>mean people</th><th>max people</th><th>dwell events</th></tr>\n"
            + "\n".join(zones)
            + "</table></details>"
        )
    return "".join(f"{part}\n" for part in parts)


def _figures(lines: list[tuple[str, str]], table: str = "figures") -> str:
    rows = "\n".join(
        f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
        for name, value in lines
    )
    return f'<table id="{table}">{rows}</table>'


def figures_html(summary: dict[str, Any]) -> str:
    """The figures: the one camera's, or each camera's and the device's totals."""
    cameras = summary.get("cameras")
    if cameras is None:
        return f"<h2>Figures</h2>\n{_figures(figure_lines(summary))}\n"
    esc = html.escape
    parts = [
        f"<h2>Camera {esc(name)}</h2>\n"
        f"{_figures(camera_figures(figures), f'figures-{esc(name)}')}\n"
        for name, figures in cameras.items()
    ]
    rows = []
    for name, figures in cameras.items():
        lines = figures.get("lines", {}).values()
        zones = figures.get("zones", {}).values()
        rows.append(
            f"<tr><td>{esc(name)}</td><td>{_cell(figures['max_count'])}</td>"
            f"<td>{sum(t['in'] for t in lines)}</td><td>{sum(t['out'] for t in lines)}</td>"
            f"<td>{sum(z['dwell_events'] for z in zones)}</td></tr>"
        )
    total = summary["total"]
    rows.append(
        f"<tr><th>all cameras</th><th></th><th>{total['in']}</th><th>{total['out']}</th>"
        f"<th>{total['dwell_events']}</th></tr>"
    )
    parts.append(
        '<h2>All cameras</h2>\n<table id="total"><tr><th>camera</th><th>max people</th>'
        "<th>in</th><th>out</th><th>dwell events</th></tr>\n" + "\n".join(rows) + "</table>\n"
        f"{_figures(device_figures(summary), 'device')}\n"
    )
    return "".join(parts)


def page(
    source: Path,
    summary: dict[str, Any],
    named: Named,
    timeline: Timeline,
    chart: bytes,
    skipped: Skipped,
    pictures: str = "",
) -> str:
    """The report's page; ``timeline`` gives the model's messages and the streams."""
    esc = html.escape
    damaged = (
        f" {esc(skipped.what())} of it were skipped (torn or corrupt); the figures are of the rest."
        if skipped
        else ""
    )
    cameras = summary.get("cameras")
    of = f" of {len(cameras)} cameras ({esc(', '.join(cameras))})" if cameras else ""
    texts = "\n".join(  # the model's text as the console shows it: no control characters
        f"<tr><td>{t:.1f}</td><td>{esc(printable(text))}</td></tr>" for t, text in timeline.texts
    )
    streams = sorted(
        [(t, "started", name, "") for t, name in timeline.starts]
        + [(t, "stopped", name, reason) for t, name, reason in timeline.stops]
    )
    stream_rows = "\n".join(
        f"<tr><td>{t:.1f}</td><td>{esc(what)}</td><td>{esc(name)}</td><td>{esc(reason)}</td></tr>"
        for t, what, name, reason in streams
    )
    image = base64.b64encode(chart).decode()
    # One screen: the chart with the figures beside it; every detail below, folded (each
    # summary says how much it holds), so a long run's tables never push the chart away.
    folded = (
        f"<details><summary>Pictured events</summary>\n{pictures}</details>\n" if pictures else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lookout report: {esc(source.name)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.2rem 2rem; color: #222; max-width: 1500px; }}
h1 {{ margin: 0 0 0.3rem; font-size: 1.4rem; }}
p.source {{ margin: 0 0 0.6rem; }}
.top {{ display: grid; grid-template-columns: minmax(0, 3fr) minmax(15rem, 1fr); gap: 1rem;
        align-items: start; }}
.top img {{ max-width: 100%; max-height: 78vh; }}
.figures h2 {{ font-size: 1rem; margin: 0 0 0.3rem; }}
table {{ border-collapse: collapse; margin-bottom: 1rem; }}
th, td {{ text-align: left; padding: 0.2rem 0.7rem; border-bottom: 1px solid #ddd; }}
.figures th, .figures td {{ padding: 0.1rem 0.5rem; font-size: 0.9rem; }}
.figures td {{ white-space: nowrap; }}
details {{ margin: 0.4rem 0; }}
summary {{ cursor: pointer; font-weight: 600; }}
.missing {{ color: #888; font-style: italic; }}
@media (max-width: 900px) {{ .top {{ grid-template-columns: 1fr; }} }}
</style></head><body>
<h1>Lookout report</h1>
<p class="source">From <code>{esc(str(source))}</code>: {summary["events"]} events{of}.{damaged}</p>
<div class="top"><img alt="people count over time" src="data:image/png;base64,{image}">
<div class="figures">{figures_html(summary)}</div></div>
{scene_tables(named)}{folded}<details><summary>Model messages ({len(timeline.texts)})</summary>
<table id="messages"><tr><th>t (s)</th><th>text</th></tr>{texts}</table></details>
<details><summary>Streams ({len(streams)} starts and stops)</summary>
<table id="streams"><tr><th>t (s)</th><th></th><th>tool</th><th>reason</th></tr>
{stream_rows}</table></details>
</body></html>
"""


__all__ = ["figures_html", "page", "scene_tables"]
