"""An email report: a period's numbers through the query layer the API uses (so that they equal
``GET /metrics?from=..&to=..&compare=previous_period`` and the breakdowns of that range), and
the mail that carries them: plain text, HTML, and the chart as an inline PNG (``cid:``).

The change of each number is against the previous period of the same length (the API's
``compare=previous_period``: for a month of 30 days, the 30 days before it).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlencode

from svc.mail.chart import bar_chart
from svc.mail.outbox import Attachment
from svc.mail.periods import Period
from svc.meta.store import Project
from svc.queries import breakdown, conversions, timeseries
from svc.queries.dimensions import DIMENSIONS
from svc.queries.metrics import query_metrics
from svc.queries.plan import Query
from svc.saved.funnels import Funnel, query_saved
from svc.saved.goals import Goal, query_conversions
from svc.storage.events import EventStore

TOP = 5
#: A report reads at most this many saved funnels, the first saved (one statement each).
MAX_FUNNELS = 10
CHART_CID = "chart@svc"
#: (label, key of GET /metrics' answer, how it is shown, whether less is better)
NUMBERS = (
    ("Visitors", "visitors", "int", False),
    ("Visits", "sessions", "int", False),
    ("Page views", "pageviews", "int", False),
    ("Bounce rate", "bounceRate", "percent", True),
    ("Visit duration", "avgSessionDuration", "seconds", False),
)


@dataclass(frozen=True)
class Report:
    project: Project
    period: Period
    metrics: dict[str, Any]  # GET /metrics of the period
    previous: dict[str, Any]  # ... of the previous period
    series: list[int]  # visitors per hour (a day) or per day
    previous_series: list[int]
    pages: list[dict[str, Any]]  # GET /metrics/breakdown?by=page rows, the top ones
    sources: list[dict[str, Any]]
    #: GET /metrics/goals of the saved goals (without `goal`), or of the custom events when
    #: the project has none; most converting first
    goals: list[dict[str, Any]]
    #: GET /metrics/funnel?funnel=<id> of the first :data:`MAX_FUNNELS` saved funnels, in the
    #: order saved
    funnels: list[dict[str, Any]]


def compute(
    store: EventStore,
    project: Project,
    period: Period,
    raw_from: date | None = None,
    saved_goals: Sequence[Goal] = (),
    saved_funnels: Sequence[Funnel] = (),
) -> Report:
    """The numbers of a report (blocking: it runs queries). ``raw_from``: the first day whose
    raw events the project keeps (svc.retention), as the API reads it. ``saved_goals``: the
    project's saved goals (svc.saved.goals); with some, the goals listed are theirs (each
    with its name, as GET /metrics/goals without ``goal`` answers), else the period's
    :data:`TOP` most frequent custom events. ``saved_funnels``: the project's saved funnels
    (svc.saved.funnels); the first :data:`MAX_FUNNELS` are read as GET /metrics/funnel with
    ``funnel=<id>`` reads them."""
    rng = period.rng
    now = Query(project.id, rng, raw_from=raw_from)
    before = Query(project.id, rng.previous_period(), raw_from=raw_from)
    interval = "hour" if rng.days == 1 else "day"
    page = breakdown.Page(TOP, 0, "-visitors")
    events = breakdown.query_breakdown(store, now, DIMENSIONS["event"], breakdown.Page(TOP + 1))
    names = [r["value"] for r in events["rows"] if r["value"] != "page_view"][:TOP]
    found: list[dict[str, Any]] = []
    if saved_goals:
        found = query_conversions(store, now, saved_goals)["goals"]
    elif names:
        found = conversions.query_goals(store, now, [f"event:{n}" for n in names])["goals"]
    goals = sorted(found, key=lambda g: -int(g["visitors"]))  # stable: ties as saved
    return Report(
        project=project,
        period=period,
        metrics=query_metrics(store, now).to_json(),
        previous=query_metrics(store, before).to_json(),
        series=[p["visitors"] for p in timeseries.query_timeseries(store, now, interval)["points"]],
        previous_series=[
            p["visitors"] for p in timeseries.query_timeseries(store, before, interval)["points"]
        ],
        pages=breakdown.query_breakdown(store, now, DIMENSIONS["page"], page)["rows"],
        sources=breakdown.query_breakdown(store, now, DIMENSIONS["source"], page)["rows"],
        goals=goals,
        funnels=[query_saved(store, now, f) for f in saved_funnels[:MAX_FUNNELS]],
    )


def _number(value: Any, how: str) -> float:
    if how == "percent":
        return float(str(value).rstrip("%"))
    return float(value)


def shown(value: Any, how: str) -> str:
    if how == "int":
        return f"{int(value):,}"
    if how == "percent":
        return str(value)
    return duration(float(value))


def duration(seconds: float) -> str:
    """A duration as the dashboard writes it (dashboard/src/format.ts ``duration``): "180ms"
    under a second, "4.2s" under ten, "45s", "2m 08s", "1h 02m"; rounded (halves up, as the
    page's ``Math.round``) to what is shown before it is split into units, so 59.96 s is
    "1m 00s"."""

    def rnd(x: float) -> int:
        return math.floor(x + 0.5)

    if seconds < 0:
        return "-" + duration(-seconds)
    ms = rnd(seconds * 1000)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    tenths = rnd(seconds * 10)
    if tenths < 100:
        return f"{tenths / 10:.1f}s"
    whole = rnd(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    minutes = rnd(seconds / 60)
    return f"{minutes // 60}h {minutes % 60:02d}m"


def change(now: Any, before: Any, how: str) -> str:
    """``+12%``, ``-3%``, ``+1.5 pts`` (a rate), ``new`` (nothing before), ``=``."""
    a, b = _number(now, how), _number(before, how)
    if how == "percent":
        d = a - b
        return "=" if abs(d) < 0.05 else f"{d:+.1f} pts"
    if b == 0:
        return "=" if a == 0 else "new"
    pct = 100 * (a - b) / b
    return "=" if abs(pct) < 0.5 else f"{pct:+.0f}%"


def dashboard_link(base_url: str, project: Project, period: Period) -> str:
    query = urlencode(
        {
            "project": project.id,
            "period": "custom",
            "from": period.rng.first.isoformat(),
            "to": period.rng.last.isoformat(),
            "compare": "previous_period",
        }
    )
    return f"{base_url.rstrip('/')}/dashboard?{query}"


def render(
    report: Report, base_url: str, unsubscribe_url: str
) -> tuple[str, str, str, list[Attachment]]:
    """(subject, text, HTML, attachments) of the report's mail."""
    p, period = report.project, report.period
    kind = {"daily": "Daily", "weekly": "Weekly", "monthly": "Monthly"}[period.kind]
    subject = f"{kind} report for {p.name}: {period.label}"
    link = dashboard_link(base_url, p, period)
    rows = [
        (
            label,
            shown(report.metrics[key], how),
            change(report.metrics[key], report.previous[key], how),
        )
        for label, key, how, _ in NUMBERS
    ]
    text = [
        f"{subject}",
        f"{period.rng.first} to {period.rng.last} ({p.timezone}), against the "
        f"{period.rng.days} day(s) before",
        "",
    ]
    text += [f"{label:<16}{value:>12}  {delta}" for label, value, delta in rows]
    for title, items, fmt in _lists(report):
        text += ["", title]
        text += [f"  {fmt(i)}" for i in items] or ["  (none)"]
    text += ["", f"Dashboard: {link}", "", f"Unsubscribe: {unsubscribe_url}", ""]

    e = html.escape
    cells = "".join(
        f'<tr><td style="padding:4px 12px 4px 0">{e(label)}</td>'
        f'<td style="padding:4px 12px;text-align:right"><b>{e(value)}</b></td>'
        f'<td style="padding:4px 0;color:#64748b">{e(delta)}</td></tr>'
        for label, value, delta in rows
    )
    lists = ""
    for title, items, fmt in _lists(report):
        entries = "".join(f"<li>{e(fmt(i))}</li>" for i in items) or "<li>(none)</li>"
        lists += f'<h3 style="margin:16px 0 4px">{e(title)}</h3><ul>{entries}</ul>'
    body = (
        '<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#0f172a">'
        f'<h2 style="margin:0">{e(subject)}</h2>'
        f'<p style="color:#64748b">{e(str(period.rng.first))} to {e(str(period.rng.last))} '
        f"({e(p.timezone)}), against the {period.rng.days} day(s) before</p>"
        f"<table>{cells}</table>"
        f'<p><img src="cid:{CHART_CID}" width="600" height="160" '
        f'alt="Visitors per {"hour" if period.rng.days == 1 else "day"}"></p>'
        f"{lists}"
        f'<p><a href="{e(link)}">Open the dashboard at this period</a></p>'
        f'<p style="color:#64748b;font-size:12px"><a href="{e(unsubscribe_url)}">'
        "Unsubscribe</a> from this report.</p></body></html>"
    )
    chart = bar_chart(report.series, report.previous_series)
    return subject, "\n".join(text), body, [Attachment("chart.png", "image/png", chart, CHART_CID)]


def _lists(report: Report) -> list[tuple[str, list[dict[str, Any]], Any]]:
    def visitors(r: dict[str, Any]) -> str:
        return f"{r['value'] or '(none)'}: {int(r['visitors']):,} visitors"

    def goal(g: dict[str, Any]) -> str:
        name = str(g["name"]) if "name" in g else str(g["goal"]).removeprefix("event:")
        return f"{name}: {int(g['visitors']):,} visitors ({g['conversionRate']})"

    def funnel(f: dict[str, Any]) -> str:
        steps = " → ".join(f"{int(s['visitors']):,}" for s in f["steps"])
        return f"{f['funnel']['name']}: {steps} visitors ({f['steps'][-1]['conversionRate']})"

    lists: list[tuple[str, list[dict[str, Any]], Any]] = [
        ("Top pages", report.pages, visitors),
        ("Top sources", report.sources, visitors),
        ("Goals", report.goals, goal),
    ]
    if report.funnels:  # a project without saved funnels gets no empty list
        lists.append(("Funnels", report.funnels, funnel))
    return lists
