"""The dimensions a query can break down or filter by.

An *event* dimension is a property of each event (its page, its name, a custom property);
filtering by it keeps the matching events, and the sessions that have one. A *session*
dimension is a property of the session, taken from its first event (source, country, browser,
entry page, ...) or its last (exit page); filtering by it keeps whole sessions.

Only the SQL expressions in this module are ever written into query text; a custom property
key is a bound parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from svc.errors import InvalidRequest

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


_SESSION_COLUMNS = {
    "entry_page": "path",
    "source": "source",
    "channel": "channel",
    "referrer": "referrer_host",
    "utm_source": "utm_source",
    "utm_medium": "utm_medium",
    "utm_campaign": "utm_campaign",
    "utm_content": "utm_content",
    "utm_term": "utm_term",
    "country": "country",
    "region": "region",
    "city": "city",
    "browser": "browser",
    "browser_version": "concat(browser, ' ', browser_version)",
    "os": "os",
    "os_version": "concat(os, ' ', os_version)",
    "device": "device",
}

DIMENSIONS: dict[str, Dimension] = {
    # a page breakdown counts page views (a filter on page keeps every event on the page)
    "page": Dimension("page", "event", "path", rows="name = 'page_view'"),
    "hostname": Dimension("hostname", "event", "hostname"),
    "event": Dimension("event", "event", "toString(name)"),
    **{n: Dimension(n, "session", c) for n, c in _SESSION_COLUMNS.items()},
    "exit_page": Dimension("exit_page", "session", "path", exit=True),
}

_PROP_KEY = re.compile(r"^[^\x00-\x1f]{1,200}$")


def dimension(name: str, param_name: str, field: str = "by") -> tuple[Dimension, dict[str, str]]:
    """The dimension called ``name`` (``prop:<key>`` for a custom property), with the bound
    parameters its expression needs (named from ``param_name``)."""
    if name.startswith("prop:"):
        key = name[5:]
        if not _PROP_KEY.match(key):
            raise InvalidRequest(f"`{field}`: {name!r} needs a property name", field=field)
        return (
            Dimension(
                name,
                "event",
                f"properties[{{{param_name}:String}}]",
                rows=f"mapContains(properties, {{{param_name}:String}})",
            ),
            {param_name: key},
        )
    try:
        return DIMENSIONS[name], {}
    except KeyError:
        raise InvalidRequest(
            f"`{field}`: unknown dimension {name!r}; use one of "
            f"{', '.join(sorted(DIMENSIONS))} or prop:<key>",
            field=field,
        ) from None
