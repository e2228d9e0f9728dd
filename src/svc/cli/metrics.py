"""``svcm metrics``: the aggregates of a range, a breakdown by a dimension, or a time series."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from svc import csv_cells
from svc.cli.common import (
    Context,
    command,
    connection_options,
    output_options,
    project_option,
    range_options,
    range_params,
)
from svc.cli.errors import UsageError
from svc.schema import dimensions as schema_dimensions
from svc.schema.measurements import BREAKDOWN_KINDS, VITALS

#: The dimensions, in the order the help lists them.
DIMENSIONS = tuple(schema_dimensions.DIMENSIONS)
OPERATORS = ("is", "is_not", "contains", "not_contains", "matches", "not_matches")
SHORTHAND = {"==": "is", "=": "is", "!=": "is_not", "~": "contains", "!~": "not_contains"}
ORDERS = (
    "visitors",
    "sessions",
    "pageviews",
    "events",
    "bounceRate",
    "avgSessionDuration",
    "value",
)

_LONG = re.compile(r"^(prop:[^:]+|[a-z_]+):(" + "|".join(OPERATORS) + r"):(.*)$", re.S)
_SHORT = re.compile(r"^(prop:[^=!~]+?|[a-z_]+?)(==|!=|!~|=|~)(.*)$", re.S)

FILTER_HELP = """\
filters (--filter, repeatable, all must hold):
  DIM:OP:VALUE        OP is is, is_not, contains, not_contains, matches or not_matches
                      (RE2 regular expression); is/is_not take alternatives a|b
  DIM=VALUE           the same as DIM:is:VALUE;  DIM!=VALUE is is_not
  DIM~VALUE           contains (case-insensitive);  DIM!~VALUE is not_contains
  DIM is one of: {dims}, or prop:<key> for a custom property."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "metrics",
        summary="aggregates of a range, a breakdown (--by) or a time series (--interval)",
        description="The metrics of a project over a range of days: visitors, sessions, page "
        "views, events,\nbounce rate, session duration and traffic sources; --compare adds "
        "the previous period or\nyear. --by breaks them down by a dimension, --interval "
        "gives a zero-filled time series.\n\n" + FILTER_HELP.format(dims=", ".join(DIMENSIONS)),
        examples=[
            "svcm metrics -p acme --from 2024-06-01 --to 2024-06-30",
            "svcm metrics -p acme --from 30d --compare previous_period",
            "svcm metrics -p acme --from 7d --by page --limit 20",
            "svcm metrics -p acme --from 7d --by source --filter country=DE --filter 'page~/blog'",
            "svcm metrics -p acme --from 7d --by prop:plan --order=-pageviews --csv > plans.csv",
            "svcm metrics -p acme --from today --interval hour --json",
        ],
        handler=run_metrics,
        parents=[connection_options(), output_options()],
    )
    project_option(p)
    range_options(p)
    by = p.add_argument(
        "--by",
        metavar="DIM",
        help="break down by this dimension (see filters, or prop:<key>), or a report of the "
        "script's extensions: " + ", ".join(BREAKDOWN_KINDS),
    )
    by.completion_values = DIMENSIONS + BREAKDOWN_KINDS  # type: ignore[attr-defined]
    p.add_argument(
        "--interval",
        choices=["hour", "day", "week", "month"],
        help="a time series with one point per hour, day, week or month",
    )
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="FILTER",
        help="keep only what matches (repeatable; see filters above)",
    )
    p.add_argument(
        "--compare",
        choices=["previous_period", "previous_year"],
        help="also show the range before, or the same range a year before (the totals, or "
        "each row of --by with its change)",
    )
    p.add_argument(
        "--limit", type=int, metavar="N", help="breakdown rows to show (1-1000, default 100)"
    )
    p.add_argument("--offset", type=int, metavar="N", help="breakdown rows to skip")
    p.add_argument(
        "--order",
        metavar="FIELD",
        help="breakdown order: " + ", ".join(ORDERS) + "; prefix - (as --order=-pageviews) "
        "or suffix :desc for descending (default -visitors)",
    )
    p.add_argument(
        "--duration",
        choices=["events", "engaged"],
        help="the visit duration of the totals: first to last event (default), or the "
        "engaged time the engagement extension reports",
    )
    p.add_argument(
        "--csv",
        action="store_true",
        help="print CSV (with a header row); a text cell that begins with =, +, -, @, a tab, "
        "a carriage return or ' gets a ' in front, so that no spreadsheet runs it as a formula",
    )


def filter_param(text: str) -> str:
    """``DIM:OP:VALUE`` as it is, or the shorthand ``DIM=VALUE`` (and ``!=``, ``~``, ``!~``)
    as ``DIM:OP:VALUE``."""
    if _LONG.match(text):
        return text
    match = _SHORT.match(text)
    if match:
        dim, op, value = match.groups()
        return f"{dim}:{SHORTHAND[op]}:{value}"
    raise UsageError(
        f"--filter {text!r}: write DIM:OP:VALUE (like page:contains:/blog) or DIM=VALUE, "
        "DIM!=VALUE, DIM~VALUE, DIM!~VALUE"
    )


def order_param(text: str) -> str:
    text = text.strip()
    for suffix, sign in ((":desc", "-"), (":asc", "")):
        if text.endswith(suffix):
            return sign + text[: -len(suffix)]
    return text


def run_metrics(ctx: Context) -> int:
    if ctx.opt("csv") and ctx.json:
        raise UsageError("give either --json or --csv")
    by, interval, compare = ctx.opt("by"), ctx.opt("interval"), ctx.opt("compare")
    if by and interval:
        raise UsageError("give either --by or --interval")
    if compare and interval:
        raise UsageError("--compare works on the totals and --by, not with --interval")
    if not by and any(ctx.opt(n) is not None for n in ("limit", "offset", "order")):
        raise UsageError("--limit, --offset and --order go with --by")
    params = [*range_params(ctx)]
    params += [("filter", filter_param(f)) for f in ctx.opt("filter") or []]
    path = "/metrics"
    if by:
        path = "/metrics/breakdown"
        params.append(("by", by))
        if ctx.opt("limit") is not None:
            params.append(("limit", str(ctx.opt("limit"))))
        if ctx.opt("offset") is not None:
            params.append(("offset", str(ctx.opt("offset"))))
        if ctx.opt("order"):
            params.append(("order", order_param(ctx.opt("order"))))
    elif interval:
        path = "/metrics/timeseries"
        params.append(("interval", interval))
    if compare:
        params.append(("compare", compare))
    if ctx.opt("duration"):
        if by or interval:
            raise UsageError("--duration works on the totals only, not with --by or --interval")
        params.append(("duration", ctx.opt("duration")))
    project = ctx.project()
    params.append(("projectId", project))
    doc = ctx.api().get(path, params)
    if ctx.json:
        ctx.out.json(doc)
    elif by:
        show_rows(ctx, doc.get("rows", []), by, doc)
    elif interval:
        show_rows(ctx, doc.get("points", []), "time", doc)
    else:
        show_totals(ctx, doc, project)
    return 0


ROW_FIELDS = ("visitors", "sessions", "pageviews", "events", "bounceRate", "avgSessionDuration")
ROW_TITLES = ("VISITORS", "SESSIONS", "PAGEVIEWS", "EVENTS", "BOUNCE RATE", "AVG DURATION")
TOTALS = (
    ("visitors", "Visitors"),
    ("sessions", "Sessions"),
    ("pageviews", "Page views"),
    ("events", "Events"),
    ("viewsPerSession", "Views per session"),
    ("bounceRate", "Bounce rate"),
    ("avgSessionDuration", "Avg. session duration"),
)


def duration(seconds: Any) -> str:
    try:
        total = float(seconds)
    except (TypeError, ValueError):
        return str(seconds)
    minutes, secs = divmod(round(total), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.endswith("%"):
        try:
            return float(value[:-1])
        except ValueError:
            return None
    return None


def change(now: Any, before: Any, field: str) -> str:
    a, b = _number(now), _number(before)
    if a is None or b is None:
        return ""
    if field == "bounceRate":
        diff = a - b
        return f"{diff:+.1f} pt" if diff else "="
    if b == 0:
        return "new" if a else "="
    pct = (a - b) / b * 100
    return f"{pct:+.1f}%" if round(pct, 1) else "="


def _display(field: str, value: Any) -> Any:
    if field == "avgSessionDuration":
        return duration(value)
    return value


def show_totals(ctx: Context, doc: dict[str, Any], project: str) -> None:
    before = doc.get("compare") if isinstance(doc.get("compare"), dict) else None
    if ctx.opt("csv"):
        fields = ["from", "to", *[f for f, _ in TOTALS]]
        # text visitors sent (a path, a source, a property) is no formula: svc.csv_cells
        writer = csv_cells.Writer(sys.stdout)
        writer.writerow(["range", *fields])
        writer.writerow(["current", *[doc.get(f, "") for f in fields]])
        if before:
            writer.writerow(["previous", *[before.get(f, "") for f in fields]])
        return
    if not ctx.out.stdout_tty:
        for field, _ in TOTALS:
            row = [field, doc.get(field)]
            if before:
                row.append(before.get(field))
            ctx.out.line("\t".join("" if v is None else str(v) for v in row))
        for source, n in (doc.get("trafficSources") or {}).items():
            ctx.out.line(f"source:{source}\t{n}")
        return
    title = f"{project}  {doc.get('from')} – {doc.get('to')} ({doc.get('timezone', 'UTC')})"
    filters = ctx.opt("filter") or []
    if filters:
        title += "  filtered: " + ", ".join(filters)
    columns = ["METRIC", "VALUE"]
    if before:
        columns += [f"{before.get('from')} – {before.get('to')}", "CHANGE"]
    rows = []
    for field, name in TOTALS:
        row = [name, _display(field, doc.get(field))]
        if before:
            row += [
                _display(field, before.get(field)),
                change(doc.get(field), before.get(field), field),
            ]
        rows.append(row)
    ctx.out.table(columns, rows, title=title, right=columns[1:])
    sources = doc.get("trafficSources") or {}
    if sources:
        total = sum(int(v) for v in sources.values()) or 1
        ctx.out.line("")
        ctx.out.table(
            ["SOURCE", "SESSIONS", "SHARE"],
            [[s, n, f"{100 * int(n) / total:.1f}%"] for s, n in sources.items()],
            title="Traffic sources",
            right=["SESSIONS", "SHARE"],
        )


#: The columns of the breakdowns of the extensions' reports (``by``): a field of the row (a
#: dotted path into it) and its title.
KIND_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "engagement": (
        ("visitors", "VISITORS"),
        ("pageviews", "PAGEVIEWS"),
        ("engagedVisits", "ENGAGED VISITS"),
        ("medianEngagedMs", "MEDIAN MS"),
        ("meanEngagedMs", "MEAN MS"),
        *((f"scrollDepth.{q}", f"SCROLL {q}%") for q in ("25", "50", "75", "100")),
    ),
    "clicks": (("visitors", "VISITORS"), ("events", "EVENTS")),
    "vitals": (
        ("samples", "SAMPLES"),
        *((f"{v.name}.p75", f"{v.name.upper()} P75") for v in VITALS),
        *((f"{v.name}.good", f"{v.name.upper()} GOOD") for v in VITALS),
    ),
}


def row_columns(by: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields and titles of the rows of a breakdown ``by`` (or a time series)."""
    if by not in BREAKDOWN_KINDS:
        return ROW_FIELDS, ROW_TITLES
    group = by if by == "engagement" else "vitals" if by.startswith("vitals:") else "clicks"
    columns = KIND_COLUMNS[group]
    return tuple(f for f, _ in columns), tuple(t for _, t in columns)


def _field(row: dict[str, Any], path: str) -> Any:
    value: Any = row
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def row_change(row: dict[str, Any], field: str) -> str:
    """A compared breakdown row's change of ``field`` as the API gives it (``change``:
    relative percent for counts and times, percentage points for shares), '' when none."""
    value = _field(row.get("change") or {}, field)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    unit = " pt" if isinstance(_field(row, field), str) else "%"
    return f"{value:+.1f}{unit}" if value else "="


def show_rows(ctx: Context, rows: list[dict[str, Any]], key: str, doc: dict[str, Any]) -> None:
    first = "value" if key != "time" else "time"
    fields, titles = row_columns(key)
    compared = key != "time" and isinstance(doc.get("compare"), dict)
    if ctx.opt("csv"):
        # text visitors sent (a path, a source, a property) is no formula: svc.csv_cells
        writer = csv_cells.Writer(sys.stdout)
        extra = [f"{p}_{f}" for f in fields for p in ("previous", "change")] if compared else []
        writer.writerow([first, *fields, *extra])
        for r in rows:
            cells = ["" if (v := _field(r, f)) is None else v for f in fields]
            if compared:
                for f in fields:
                    before = _field(r.get("compare") or {}, f)
                    after = _field(r.get("change") or {}, f)
                    cells += ["" if before is None else before, "" if after is None else after]
            writer.writerow([r.get(first, ""), *cells])
        return
    table_rows: list[list[Any]] = []
    peak = max((int(r.get("visitors", 0) or 0) for r in rows), default=0) or 1
    for r in rows:
        value = r.get(first)
        row: list[Any] = [
            value if value not in (None, "") else "(none)",
            *[_display(f, _field(r, f)) if ctx.out.stdout_tty else _field(r, f) for f in fields],
        ]
        if compared:
            row += [row_change(r, f) for f in fields]
        if key == "time" and ctx.out.stdout_tty:
            row.append("█" * round(20 * int(r.get("visitors", 0) or 0) / peak) or " ")
        table_rows.append(row)
    changes = [f"{t} CHANGE" for t in titles] if compared else []
    columns = [key.upper(), *titles, *changes]
    columns += [""] if key == "time" and ctx.out.stdout_tty else []
    if compared and ctx.out.stdout_tty:
        other = doc["compare"]
        ctx.out.note(f"changes against {other.get('from')} – {other.get('to')}")
    ctx.out.table(columns, table_rows, right=[*titles, *changes], empty="no data in this range")
    total = doc.get("totalRows")
    if ctx.out.stdout_tty and isinstance(total, int) and total > len(rows):
        offset = int(doc.get("offset", 0) or 0)
        ctx.out.note(
            f"rows {offset + 1}–{offset + len(rows)} of {total} (see --limit and --offset)"
        )
