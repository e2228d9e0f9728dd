"""The dimensions a report can break down or filter by, and the column of each.

An *event* dimension is a property of each event (its page, its name, a custom property);
filtering by it keeps the matching events, and the sessions that have one. A *session*
dimension is a property of the session, taken from its first event (source, country, browser,
entry page, ...) or its last (exit page); filtering by it keeps whole sessions.

Only the SQL expressions in this module are ever written into query text; a custom property
key (``prop:<key>``, :func:`svc.queries.dimensions.dimension`) is a bound parameter. Standard
library only: ``svcm`` lists the names at every start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["event", "session"]


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    level: Level
    column: str  # an expression over one events row; may hold {param} placeholders
    exit: bool = False  # session dimension taken from the last event instead of the first
    rows: str = "1"  # in a breakdown by an event dimension, the events that have a value

    def session_column(self) -> str:
        """The dimension's value on a row of the sessions table (whose entry columns are named
        as the events' columns)."""
        if self.exit:
            return "tupleElement(exit, 2)"
        return "entry_page" if self.column == "path" else self.column


#: Every dimension by name, in the order the documentation and ``svcm`` list them.
DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        # a page breakdown counts page views (a filter on page keeps every event on the page)
        Dimension("page", "event", "path", rows="name = 'page_view'"),
        Dimension("entry_page", "session", "path"),
        Dimension("exit_page", "session", "path", exit=True),
        Dimension("hostname", "event", "hostname"),
        Dimension("source", "session", "source"),
        Dimension("channel", "session", "channel"),
        Dimension("referrer", "session", "referrer_host"),
        Dimension("utm_source", "session", "utm_source"),
        Dimension("utm_medium", "session", "utm_medium"),
        Dimension("utm_campaign", "session", "utm_campaign"),
        Dimension("utm_content", "session", "utm_content"),
        Dimension("utm_term", "session", "utm_term"),
        Dimension("country", "session", "country"),
        Dimension("region", "session", "region"),
        Dimension("city", "session", "city"),
        Dimension("browser", "session", "browser"),
        Dimension("browser_version", "session", "concat(browser, ' ', browser_version)"),
        Dimension("os", "session", "os"),
        Dimension("os_version", "session", "concat(os, ' ', os_version)"),
        Dimension("device", "session", "device"),
        Dimension("event", "event", "toString(name)"),
    )
}
