"""Every SQL statement of the query side is built in this package, with bound parameters only:
the reads of the reports from a plan and its facts (:mod:`.sessions`: the session rows and
the rollups; each report's statements: :mod:`.breakdowns`, :mod:`.series`, :mod:`.goals`,
:mod:`.funnels`, :mod:`.custom_events`, :mod:`.realtime`, :mod:`.measurements`,
:mod:`.journeys`), and here the statements of the runtime (usage, recent sessions and event
ids), of the export and of ``svcm import``'s server-side path.

Values never enter SQL text: they are passed as ClickHouse ``{name:Type}`` parameters. Only
identifiers and expressions chosen from fixed tables in this package (and the dimensions'
expressions of :mod:`svc.schema.dimensions`) are written into the text. Every builder is a
pure function: :class:`svc.queries.run.Runner` runs what they build.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from svc import csv_cells
from svc.queries.dates import DateRange
from svc.queries.sql.statement import RANGE_WHERE, Statement
from svc.schema.measurements import COUNTED_SQL

__all__ = [
    "EXPORT_COLUMNS",
    "EXPORT_COLUMNS_JSON_PROPERTIES",
    "Statement",
    "export_events",
    "export_hours",
    "into_parquet_file",
    "recent_event_ids",
    "recent_sessions",
    "stored_event_ids",
    "usage_by_project_month",
]


def _range_params(project_id: str, rng: DateRange) -> dict[str, Any]:
    return {
        "project": project_id,
        "start": rng.start_utc.replace(tzinfo=None),
        "end": rng.end_utc.replace(tzinfo=None),
    }


def usage_by_project_month(since_month_start: Any) -> Statement:
    """Per project and month (``YYYY-MM``) from the month of ``since_month_start`` on, the
    events received (``usage_months``, storage migration 22: one row per project and month,
    not a count of the month's events)."""
    sql = (
        "SELECT project_id, formatDateTime(month, '%Y-%m') AS m, sum(events) FROM usage_months "
        "WHERE month >= toStartOfMonth(toDate({since:DateTime64(3, 'UTC')})) "
        "GROUP BY project_id, m"
    )
    return Statement(sql, {"since": since_month_start})


def recent_sessions(since: Any) -> Statement:
    """Sessions with events received since ``since``: project, visitor, session id, and its
    start, first and last event times and when the last of them was received (ms)."""
    sql = (
        "SELECT project_id, any(visitor_id), session_id, "
        "toUnixTimestamp64Milli(min(session_start)), "
        "toUnixTimestamp64Milli(min(ts)), toUnixTimestamp64Milli(max(ts)), "
        "toUnixTimestamp64Milli(max(received_at)) "
        "FROM events WHERE received_at >= {since:DateTime64(3, 'UTC')} "
        f"AND {COUNTED_SQL} GROUP BY project_id, session_id"
    )
    return Statement(sql, {"since": since})


def recent_event_ids(since: Any) -> Statement:
    sql = (
        "SELECT project_id, event_id, toUnixTimestamp64Milli(min(received_at)) "
        "FROM events WHERE received_at >= {since:DateTime64(3, 'UTC')} AND event_id != '' "
        "GROUP BY project_id, event_id"
    )
    return Statement(sql, {"since": since})


EXPORT_COLUMNS = (
    "toUnixTimestamp64Milli(ts) AS ts_ms, name AS event, url, hostname, path, referrer, "
    "referrer_host, source, channel, utm_source, utm_medium, utm_campaign, utm_content, "
    "utm_term, click_id, toString(session_id) AS session_id, toString(visitor_id) AS "
    "visitor_id, event_id, properties, browser, browser_version, os, os_version, device, "
    "screen_width, country, region, city, toUnixTimestamp64Milli(received_at) AS received_ms"
)


#: The export columns with ``properties`` as JSON text, for CSV: ClickHouse writes a map
#: there as ``{'plan':'pro'}``, which is neither JSON nor anything else a reader knows.
EXPORT_COLUMNS_JSON_PROPERTIES = EXPORT_COLUMNS.replace(
    " properties,", " toJSONString(properties) AS properties,"
)

#: The export's text columns: in CSV each is neutralised (:func:`csv_cell`). The others
#: (``ts_ms``, ``session_id``, ``visitor_id``, ``screen_width``, ``received_ms``) are
#: unsigned integers the service writes itself and stay as they are.
CSV_TEXT_COLUMNS = frozenset(
    (
        "event",
        "url",
        "hostname",
        "path",
        "referrer",
        "referrer_host",
        "source",
        "channel",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_content",
        "utm_term",
        "click_id",
        "event_id",
        "properties",
        "browser",
        "browser_version",
        "os",
        "os_version",
        "device",
        "country",
        "region",
        "city",
    )
)

_CSV_STARTS_SQL = (
    "("
    + ", ".join(
        "'" + c.replace("\t", "\\t").replace("\r", "\\r").replace("'", "''") + "'"
        for c in csv_cells.FORMULA_STARTS
    )
    + ")"
)


def csv_cell(expr: str) -> str:
    """``expr`` (a String) as a CSV cell no spreadsheet runs, by the rule of
    :mod:`svc.csv_cells`: a value that begins with one of its ``FORMULA_STARTS`` (``=``,
    ``+``, ``-``, ``@``, tab, carriage return, single quote) gets a single quote in front
    (``=1+1`` -> ``'=1+1``). Each of these characters is one byte in UTF-8, so ``substring``
    by bytes reads the first character exactly."""
    return f"if(substring({expr}, 1, 1) IN {_CSV_STARTS_SQL}, concat('''', {expr}), {expr})"


def _csv_columns() -> str:
    out = []
    for column in EXPORT_COLUMNS_JSON_PROPERTIES.split(","):
        expr, _, alias = column.strip().rpartition(" AS ")
        expr = expr or alias
        out.append(f"{csv_cell(expr)} AS {alias}" if alias in CSV_TEXT_COLUMNS else column.strip())
    return ", ".join(out)


#: The export columns of CSV: ``properties`` as JSON text, every text column neutralised.
EXPORT_COLUMNS_CSV = _csv_columns()


def export_events(
    project_id: str,
    rng: DateRange,
    window: tuple[datetime, datetime] | None = None,
    *,
    json_properties: bool = False,
    csv: bool = False,
) -> Statement:
    """Every event of a project in a range, oldest first, in the documented export columns
    (``properties`` as JSON text with ``json_properties``; with ``csv``, that and every text
    column neutralised for spreadsheets: :func:`csv_cell`); with ``window`` (naive UTC start
    and end) only those of that part of the range. The order is the same whatever the
    columns (by ``events.event_id``, the stored id, never a neutralised alias)."""
    params = _range_params(project_id, rng)
    where = RANGE_WHERE
    if window is not None:
        params.update(w0=window[0], w1=window[1])
        where += " AND ts >= {w0:DateTime64(3, 'UTC')} AND ts < {w1:DateTime64(3, 'UTC')}"
    # toDate(ts) first: the same order, and the table's (its key starts with the day), so
    # ClickHouse sorts a day at a time instead of the whole range at once.
    columns = EXPORT_COLUMNS_JSON_PROPERTIES if json_properties else EXPORT_COLUMNS
    if csv:
        columns = EXPORT_COLUMNS_CSV
    sql = f"SELECT {columns} FROM events WHERE {where} ORDER BY toDate(ts), ts, events.event_id"
    return Statement(sql, params)


#: Row groups of a Parquet file written by the store: ~100,000 events (ClickHouse's default of
#: 1M rows or 512 MB held far more memory while writing: docs/benchmarks.md, Figures behind
#: the code).
_PARQUET_SETTINGS = (
    "output_format_parquet_row_group_size = 100000, "
    "output_format_parquet_row_group_size_bytes = 16000000"
)


def into_parquet_file(stmt: Statement, path: str) -> Statement:
    """``stmt`` written by the store to a Parquet file at ``path`` (a path svc chose: it is
    written into the SQL as a quoted literal, which INTO OUTFILE requires)."""
    literal = "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"
    sql = f"{stmt.sql} INTO OUTFILE {literal} FORMAT Parquet SETTINGS {_PARQUET_SETTINGS}"
    return Statement(sql, stmt.params)


def export_hours(project_id: str, rng: DateRange) -> Statement:
    """The events of a project in a range per UTC hour: (hour start in Unix seconds, count),
    oldest first."""
    sql = (
        "SELECT toUnixTimestamp(toStartOfHour(ts)) AS hour, count() FROM events "
        f"WHERE {RANGE_WHERE} GROUP BY hour ORDER BY hour"
    )
    return Statement(sql, _range_params(project_id, rng))


def stored_event_ids(project_id: str, lo_ms: int, hi_ms: int, event_ids: list[str]) -> Statement:
    """The ``event_ids`` a project has stored already with ``ts`` in ``[lo_ms, hi_ms]``
    (``svcm import``'s server-side path, svc.imports.store.StoreSink)."""
    sql = (
        "SELECT DISTINCT event_id FROM events WHERE project_id = {project:String} "
        "AND ts >= {lo:DateTime64(3, 'UTC')} AND ts <= {hi:DateTime64(3, 'UTC')} "
        "AND event_id IN {ids:Array(String)}"
    )
    params = {"project": project_id, "lo": _utc(lo_ms), "hi": _utc(hi_ms), "ids": event_ids}
    return Statement(sql, params)


def _utc(ms: int) -> datetime:
    """A naive UTC datetime, as the store's client binds ``DateTime64(3, 'UTC')``."""
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)
