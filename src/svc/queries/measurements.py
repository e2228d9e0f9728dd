"""The reports of the browser script's extensions (issue 20; docs/api.md, "Page
measurements"): engaged time and scroll depth per page, outbound links, downloads, 404s and
Web Vitals. Breakdown kinds of GET /metrics/breakdown (:data:`KINDS`), GET /metrics/vitals,
and the engaged visit duration of GET /metrics (``duration=engaged``).

Engaged time and scroll depth are counted per *page visit*: a (session, page) with
``engagement`` events, whose engaged time is the sum of theirs and whose depth is the
largest (the script sends one when the page is hidden, so one view may send several; two
views of a page in one session are one visit). Medians and p75 interpolate linearly between
the closest ranks (exact, as numpy's default percentile)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from svc.errors import InvalidRequest
from svc.queries import breakdown
from svc.queries.dimensions import dimension
from svc.queries.plan import Facts, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import measurements as sql
from svc.queries.timeseries import buckets
from svc.schema.measurements import BREAKDOWN_KINDS, VITALS
from svc.storage.events import EventStore

#: The breakdown kinds of this module (``by=``), beside the dimensions.
KINDS = BREAKDOWN_KINDS
#: The orders each kind takes (``-`` for descending) and its default.
ORDERS = {
    "engagement": (breakdown.ORDERS, "-visitors"),
    "clicks": (("visitors", "events", "value"), "-events"),
    "vitals": (("samples", "value"), "-samples"),
}
#: The referrers listed per 404 page.
REFERRERS_PER_PAGE = 10


@dataclass(frozen=True, slots=True)
class Paging:
    limit: int
    offset: int
    order: str


def parse_paging(kind: str, limit: str | None, offset: str | None, order: str | None) -> Paging:
    """``limit``, ``offset`` and ``order`` of a breakdown of ``kind`` (400 naming each)."""
    group = "engagement" if kind == "engagement" else "vitals" if kind.startswith("v") else "clicks"
    allowed, default = ORDERS[group]
    page = breakdown.parse_page(limit, offset, None)
    chosen = order or default
    if chosen.lstrip("-+") not in allowed:
        raise InvalidRequest(
            f"`order` must be one of {', '.join(allowed)} for by={kind} (prefix - for descending)",
            field="order",
        )
    return Paging(page.limit, page.offset, chosen)


def query_kind(
    store: EventStore,
    query: Query,
    kind: str,
    paging: Paging,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The breakdown ``by=kind`` (one of :data:`KINDS`); with ``only``, the rows of those
    values alone, whatever ``paging`` says, and their figures only (no 404 referrers): what
    a comparison asks the other range about (svc.queries.compare)."""
    if only is not None:
        paging = Paging(max(len(only), 1), 0, paging.order)
    if kind == "engagement":
        body = query_engagement(store, query, paging, only)
    elif kind.startswith("vitals:"):
        body = query_vitals_by(store, query, kind.removeprefix("vitals:"), paging, only)
    else:
        body = query_clicks(store, query, kind, paging, only)
    return {
        "by": kind,
        **body,
        "limit": paging.limit,
        "offset": paging.offset,
        "order": paging.order,
    }


def query_engagement(
    store: EventStore, query: Query, paging: Paging, only: Sequence[str] | None = None
) -> dict[str, Any]:
    """The page breakdown (visitors, page views, ... as ``by=page``; with ``only``, of those
    pages), each row with its engagement (:func:`engagement_figures`)."""
    page_dim, _ = dimension("page", "by_key")
    pages = breakdown.query_breakdown(
        store,
        query,
        page_dim,
        breakdown.Page(paging.limit, paging.offset, paging.order),
        only=only,
    )
    p, runner = plan(query), Runner(store)
    paths = [r["value"] for r in pages["rows"]]
    measured = {}
    if paths:
        measured = {r["value"]: r for r in runner.named(sql.engagement_by_page(p, Facts(), paths))}
    rows = [{**r, **engagement_figures(measured.get(r["value"]))} for r in pages["rows"]]
    return {"rows": rows, "totalRows": pages["totalRows"]}


def engagement_figures(row: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON engagement figures of an aggregate row: page visits with engagement, median
    and mean engaged time (ms), the share of them that scrolled to 25/50/75/100 %."""
    views = int(row["views"]) if row else 0
    if not row or not views:
        return {
            "engagedVisits": 0,
            "medianEngagedMs": None,
            "meanEngagedMs": None,
            "scrollDepth": {"25": "0.0%", "50": "0.0%", "75": "0.0%", "100": "0.0%"},
        }
    return {
        "engagedVisits": views,
        "medianEngagedMs": round(float(row["median_ms"]), 1),
        "meanEngagedMs": round(float(row["mean_ms"]), 1),
        "scrollDepth": {q: percent(int(row[f"d{q}"]), views) for q in ("25", "50", "75", "100")},
    }


def query_clicks(
    store: EventStore,
    query: Query,
    kind: str,
    paging: Paging,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Outbound links and downloads per target URL, 404s per page (with its referrers, but
    with ``only``): the events of the kind and their visitors (with ``only``, of those
    targets)."""
    if only is not None and not only:
        return {"rows": [], "totalRows": 0}
    p, runner = plan(query), Runner(store)
    rows = runner.named(
        sql.clicks(p, Facts(), kind, paging.limit, paging.offset, paging.order, only)
    )
    out = [
        {"value": r["value"], "visitors": int(r["visitors"]), "events": int(r["events"])}
        for r in rows
    ]
    if kind == "404" and out and only is None:
        paths = [r["value"] for r in out]
        refs: dict[str, list[dict[str, Any]]] = {}
        for r in runner.named(sql.not_found_referrers(p, Facts(), paths, REFERRERS_PER_PAGE)):
            refs.setdefault(r["path"], []).append(
                {"value": r["referrer"], "events": int(r["events"])}
            )
        out = [{**r, "referrers": refs.get(r["value"], [])} for r in out]
    return {"rows": out, "totalRows": int(rows[0]["total_rows"]) if rows else 0}


def vital_figures(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON figures of a Web Vitals aggregate row: ``samples`` (page loads measured) and
    per vital its samples, p75 and shares good / needs improvement / poor."""
    out: dict[str, Any] = {"samples": int(row["samples"])}
    for v in VITALS:
        n = int(row[f"{v.name}_n"])
        good, poor = int(row[f"{v.name}_good"]), int(row[f"{v.name}_poor"])
        p75 = row[f"{v.name}_p75"]
        value = None if not n or p75 is None else round(float(p75), 3 if v.name == "cls" else 1)
        out[v.name] = {
            "samples": n,
            "p75": value,
            "good": percent(good, n),
            "needsImprovement": percent(n - good - poor, n),
            "poor": percent(poor, n),
        }
    return out


def query_vitals_by(
    store: EventStore,
    query: Query,
    group: str,
    paging: Paging,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Web Vitals per page, device class or country (``group``); with ``only``, of those
    values."""
    if only is not None and not only:
        return {"rows": [], "totalRows": 0}
    p = plan(query)
    rows = Runner(store).named(
        sql.vitals_by(p, Facts(), group, paging.limit, paging.offset, paging.order, only)
    )
    return {
        "rows": [{"value": r["value"], **vital_figures(r)} for r in rows],
        "totalRows": int(rows[0]["total_rows"]) if rows else 0,
    }


def query_vitals(store: EventStore, query: Query, interval: str | None) -> dict[str, Any]:
    """GET /metrics/vitals: the figures over every page load in scope, and with ``interval``
    per bucket of the range (zero-filled: ``samples`` 0, no p75)."""
    p = plan(query)
    runner = Runner(store)
    if interval is None:
        return vital_figures(runner.named(sql.vitals_total(p, Facts()))[0])
    # side by side (as the store can): the totals and the buckets
    total, series = runner.together(
        sql.vitals_total(p, Facts()), sql.vitals_series(p, Facts(), interval)
    )
    body: dict[str, Any] = vital_figures(total[0])
    by_time = {r["time"]: r for r in series}
    body["interval"] = interval
    body["points"] = [
        {"time": label, **vital_figures(by_time.get(label) or _no_samples())}
        for label in buckets(p.rng, interval)
    ]
    return body


def _no_samples() -> dict[str, Any]:
    """The aggregate row of no page load: no samples, no p75."""
    return {
        "samples": 0,
        **{f"{v.name}_{x}": 0 for v in VITALS for x in ("n", "good", "poor")},
        **{f"{v.name}_p75": None for v in VITALS},
    }


def blank_row(kind: str) -> dict[str, Any]:
    """The figures of a row of the breakdown ``by=kind`` that had nothing: what a comparison
    gives a value the other range does not have."""
    if kind == "engagement":
        return {**breakdown.blank_row(), **engagement_figures(None)}
    if kind.startswith("vitals:"):
        return vital_figures(_no_samples())
    return {"visitors": 0, "events": 0}


def parse_duration(value: str | None) -> bool:
    """GET /metrics' ``duration``: ``events`` (default: first to last event of each session)
    or ``engaged`` (the engaged time the page measurements report); True for ``engaged``."""
    if value in (None, "", "events"):
        return False
    if value == "engaged":
        return True
    raise InvalidRequest("`duration` must be events or engaged", field="duration")


def with_duration(
    body: dict[str, Any], store: EventStore, query: Query, engaged: bool
) -> dict[str, Any]:
    """GET /metrics' answer ``body``, with ``engaged``: ``avgSessionDuration`` the engaged
    time of the range's page visits (that pass the filters) over its sessions, in seconds,
    and ``duration: "engaged"``; else as it is."""
    if not engaged:
        return body
    p = plan(query)
    row = Runner(store).named(sql.engaged_time(p, Facts()))[0]
    sessions = int(body.get("sessions", 0))
    total_ms = int(row["engaged_ms"] or 0)
    body["avgSessionDuration"] = round(total_ms / 1000 / sessions, 1) if sessions else 0.0
    body["duration"] = "engaged"
    return body
