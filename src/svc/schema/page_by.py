"""The page among the sessions of one value of a session dimension: the daily rollups hold,
for the busiest values of the dimensions a dashboard filters its page list by, the page
rows of those sessions alone (svc.storage.rollups, ``page|<dimension>:<value>`` rows): the
page breakdown under that one filter reads the rolled days there (svc.queries.run)."""

from __future__ import annotations

#: The session dimensions whose busiest values have page rows of their own, and how many
#: values of each a day (the most sessions first): those whose values are few.
PAGE_BY_DIMENSIONS = ("country", "device", "browser", "os", "channel", "source")
PAGE_BY_VALUES = 30


def page_by_dimension(dimension: str, value: str) -> str:
    """The ``dimension`` of the rollups' page rows of the sessions whose ``dimension`` is
    ``value``."""
    return f"page|{dimension}:{value}"


def page_by_values(dimension: str) -> str:
    """The ``dimension`` of the rollups' rows that name the values of ``dimension`` with page
    rows of their own that day (the value)."""
    return f"page_by:{dimension}"
