"""A breakdown compared with another range (``compare`` of GET /metrics/breakdown; docs/api.md,
"Comparing a breakdown with another range").

The rows are those of the range asked for, ordered and paged by its own figures; the other
range is asked about those values alone, and each row carries the figures of its value there
(``compare``; a value the other range does not have gets the figures of nothing: zeros, no
median, no p75) and how each figure changed (``change``):

- a count or a time (visitors, events, ``avgSessionDuration``, ``medianEngagedMs``, a p75,
  ...): the relative change in percent, rounded to one decimal (``50.0``: half as much again,
  ``-100.0``: gone); ``0.0`` when both are 0; ``null`` when the other range's figure is 0 or
  null and this one is not, or this one is null (nothing to be relative to);
- a share (a string with a percent sign: ``bounceRate``, the scroll depths, the vitals'
  ``good`` / ``needsImprovement`` / ``poor``): the difference in percentage points of the two
  shares as written (one decimal each), rounded to one decimal.

Nested figures (a vital's, the scroll depths) are compared figure by figure; lists (a 404
page's referrers) are neither carried nor compared.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from svc.queries.plan import Query

#: A breakdown of a range: its answer for ``query``; with values, the rows of those alone.
Report = Callable[[Query, Sequence[str] | None], dict[str, Any]]


def compared(
    report: Report, query: Query, other: Query | None, blank: dict[str, Any]
) -> dict[str, Any]:
    """``report``'s answer for ``query``; with ``other``, each row with ``compare`` (the
    figures of its value in ``other``'s range, ``blank`` where it has none) and ``change``,
    and the answer with ``compare``: the other range's ``from`` and ``to``."""
    body = report(query, None)
    if other is None:
        return body
    rows: list[dict[str, Any]] = body["rows"]
    values = [row["value"] for row in rows]
    before = {r["value"]: r for r in report(other, values)["rows"]} if values else {}
    for row in rows:
        now = figures(row)
        then = figures(before.get(row["value"]) or copy.deepcopy(blank))
        row["compare"], row["change"] = then, change(now, then)
    body["compare"] = {"from": other.rng.first.isoformat(), "to": other.rng.last.isoformat()}
    return body


def figures(row: dict[str, Any]) -> dict[str, Any]:
    """The figures of a row: all but its value and its lists."""
    return {k: v for k, v in row.items() if k != "value" and not isinstance(v, list)}


def change(now: Any, then: Any) -> Any:
    """How a figure (or each of an object of figures) changed from ``then`` to ``now``: see
    the module's description. Anything else: None."""
    if isinstance(now, dict):
        before = then if isinstance(then, dict) else {}
        return {k: change(v, before.get(k)) for k, v in now.items()}
    if _is_share(now) and _is_share(then):
        return _tenths(float(now[:-1]) - float(then[:-1]))
    if _is_number(now) and _is_number(then):
        if then == 0:
            return 0.0 if now == 0 else None
        return _tenths(100 * (now - then) / then)
    return None


def _tenths(x: float) -> float:
    return round(x, 1) + 0.0  # + 0.0: never -0.0


def _is_share(x: Any) -> bool:
    return isinstance(x, str) and x.endswith("%")


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
