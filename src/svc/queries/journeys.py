"""Journeys (issue 42, item 3): from a page, the most common next (or previous) pages within
a session, one to three steps deep, with visitors and drop-off.

A session's **walk** is its page views in the range in time order, a page view of the same
path as the one just before it left out (a reload). An **anchor** is each view of ``page`` in
a walk (each one: a session that comes back to the page has two); without ``page``, the
session's first page (its entry in the range) for ``next``, its last (the exit) for
``previous``. From each anchor the journey takes the anchor and up to ``depth`` pages after
it (before it, for ``previous``): a **path**, when it has two pages or more. Paths are ranked
by their visitors: distinct visitors whose walk from an anchor was that path (with fewer than
``depth`` pages after the anchor only when the session ended there). Each step of a path
(each of its pages, the anchor first) has the visitors who reached it along the path and its
drop-off: those of them whose session had no further page view (for ``previous``: no earlier
one, the page was where they entered). Visitors are counted once per path and per step; one
whose sessions took a path twice counts once, one who left at a step in one session and went
on in another counts in both, so the figures need not add up.

Filters hold as on the other reads, on whole sessions (a journey is a sequence: leaving out
the page views a filter does not match would make transitions that never happened):

- a session dimension (``source``, ``country``, ``entry_page``...): the walks of the sessions
  that pass it;
- an event dimension (``page``, ``event``, ``hostname``, ``prop:<key>``): the walks of the
  sessions with a matching event in the range, every page view of them (``event:is:signup``:
  the journeys of the sessions that signed up).

One statement over the page views of the range (:func:`svc.queries.sql.journeys.journeys`):
the rollups keep no order of page views. A session that crosses an end of the range walks its
page views in the range (its entry is its first page view in the range; past the end, its
page views are not seen, so it drops off there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.plan import Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import journeys as sql
from svc.schema.limits import MAX_URL
from svc.storage.events import EventStore

#: The most pages a path takes after (before) its anchor.
MAX_DEPTH = 3
#: The most paths an answer ranks.
MAX_LIMIT = sql.MAX_PATHS
DEFAULT_DEPTH = 1
DEFAULT_LIMIT = 10


@dataclass(frozen=True, slots=True)
class Journey:
    """What a journey asks: its anchor ``page`` (None: the entry for ``next``, the exit for
    ``previous``), ``direction``, ``depth`` (1 to :data:`MAX_DEPTH` pages beyond the anchor)
    and ``limit`` (1 to :data:`MAX_LIMIT` paths)."""

    page: str | None = None
    direction: str = "next"
    depth: int = DEFAULT_DEPTH
    limit: int = DEFAULT_LIMIT


def _whole(params: Mapping[str, str], name: str, default: int, high: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidRequest(f"`{name}` must be a whole number, 1 to {high}", field=name) from None
    if not 1 <= value <= high:
        raise InvalidRequest(f"`{name}` must be 1 to {high}, got {value}", field=name)
    return value


def parse_journey(params: Mapping[str, str]) -> Journey:
    """The :class:`Journey` of a request's ``page``, ``direction``, ``depth`` and ``limit``.
    ``page`` empty or absent is None; it is a stored path (``/pricing``), at most
    :data:`~svc.schema.limits.MAX_URL` characters. Raises :class:`InvalidRequest` naming the
    parameter for a direction other than ``next``/``previous``, a depth outside 1 to
    :data:`MAX_DEPTH`, a limit outside 1 to :data:`MAX_LIMIT` or a longer page."""
    page = params.get("page") or None
    if page is not None and len(page) > MAX_URL:
        raise InvalidRequest(f"`page` has at most {MAX_URL:,} characters", field="page")
    direction = params.get("direction") or "next"
    if direction not in sql.DIRECTIONS:
        raise InvalidRequest("`direction` must be next or previous", field="direction")
    depth = _whole(params, "depth", DEFAULT_DEPTH, MAX_DEPTH)
    limit = _whole(params, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    return Journey(page, direction, depth, limit)


def _step(page: str, figures: tuple[int, int, int]) -> dict[str, Any]:
    visitors, ended, _ = figures
    return {
        "page": page,
        "visitors": visitors,
        "dropOff": ended,
        "dropOffRate": percent(ended, visitors),
    }


def query_journeys(store: EventStore, query: Query, journey: Journey) -> dict[str, Any]:
    """The journey ``journey`` under ``query`` (see the module docstring), as the API writes
    it: ``page`` (None without), ``direction``, ``depth``; ``visitors`` with an anchor and
    their ``dropOff`` (no page view beyond it) and ``dropOffRate``; ``paths``, the ``limit``
    most common, most visitors first (then by their pages in walk order), each with
    ``pages`` and ``steps`` in time order (for ``previous`` the anchor last), its
    ``visitors`` and per step ``page``, ``visitors``, ``dropOff``, ``dropOffRate``; and the
    range (``from``, ``to``, ``timezone``)."""
    p = plan(query)
    stmt = sql.journeys(p, journey.page, journey.direction, journey.depth, journey.limit)
    row = Runner(store).named(stmt)[0]
    figures: dict[tuple[str, ...], tuple[int, int, int]] = {
        tuple(str(x) for x in prefix): (int(visitors), int(ended), int(whole))
        for prefix, visitors, ended, whole in row["kept"]
    }
    ranked = [tuple(str(x) for x in pages) for pages in row["paths"]]
    backwards = journey.direction == "previous"
    paths = []
    for pages in ranked:
        steps = [_step(pages[k - 1], figures[pages[:k]]) for k in range(1, len(pages) + 1)]
        paths.append(
            {
                "pages": list(reversed(pages)) if backwards else list(pages),
                "visitors": figures[pages][2],
                "steps": list(reversed(steps)) if backwards else steps,
            }
        )
    total, ended, _ = figures.get((), (0, 0, 0))
    return {
        "page": journey.page,
        "direction": journey.direction,
        "depth": journey.depth,
        "visitors": total,
        "dropOff": ended,
        "dropOffRate": percent(ended, total),
        "paths": paths,
        "from": query.rng.first.isoformat(),
        "to": query.rng.last.isoformat(),
        "timezone": query.rng.tz,
    }
