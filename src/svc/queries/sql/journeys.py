"""The statement of GET /metrics/journeys (svc.queries.journeys): the most common walks of
page views within a session from (or to) a page, in one statement over the events.

The daily rollups and the session pages keep no order of a session's page views, so a
journey reads the page views of the range from ``events`` (whatever the rolled-up days):

1. per session, its page views in the range in time order (``groupArray`` of (ts, path),
   sorted), with a page view of the same path as the one before it left out (a reload);
   for ``previous``, reversed, so that both directions walk away from the anchor;
2. per anchor in it (each view of ``page``; the first page for ``next`` without a page,
   the entry; the last for ``previous``, the exit: the first of the reversed walk) its walk,
   the anchor and up to ``depth`` pages after it, and whether the session ends with the walk
   (``ARRAY JOIN`` over the anchors' positions);
3. per prefix of each walk (``ARRAY JOIN`` over its lengths, 0 to the walk's): the visitors
   who reached it, those whose walk ended there with the session (the drop-off), and those
   whose whole walk it is (a path: two pages or more);
4. the paths ranked by those visitors (then by their pages), and only the ``limit`` first of
   them and their prefixes returned, in one row.
"""

from __future__ import annotations

from svc.queries.plan import Facts, Plan
from svc.queries.sql.sessions import session_rows_where
from svc.queries.sql.statement import COUNTED_WHERE, RANGE_WHERE, Statement, statement

#: The journey's directions: away from the anchor in time, or back.
DIRECTIONS = ("next", "previous")
#: The most paths a journey ranks (a constant of the statement's text: the heap's size).
MAX_PATHS = 50


def _where(plan: Plan, page: str | None) -> str:
    """The page views a journey reads: of the range, of the sessions that pass the filters
    (a session filter: the session's row passes it; an event filter: the session has a
    matching event in the range), and for a ``page``, of the sessions that viewed it."""
    where = f"{RANGE_WHERE} AND name = 'page_view'"
    if plan.event_conditions:
        where += (
            " AND session_id IN (SELECT session_id FROM events "
            f"WHERE {COUNTED_WHERE} AND {plan.event_filter})"
        )
    if plan.has_session_filters:
        where += (
            " AND session_id IN (SELECT s.session_id FROM sessions AS s FINAL "
            f"WHERE {session_rows_where(plan, Facts())})"
        )
    if page is not None:
        where += (
            " AND session_id IN (SELECT session_id FROM events WHERE "
            f"{RANGE_WHERE} AND name = 'page_view' AND path = {{journey_page:String}})"
        )
    return where


def journeys(plan: Plan, page: str | None, direction: str, depth: int, limit: int) -> Statement:
    """The one row of a journey (see the module docstring): ``paths``, the ``limit`` first
    paths (most visitors first, then by their pages; each its pages from the anchor on, in
    the walk's order: back in time for ``previous``), and ``kept``, per prefix of those
    paths and ``[]``, a tuple (prefix, visitors who reached it, those of them whose walk
    ended there: no further page view in the session, for ``previous`` no earlier one,
    those whose whole walk it is). The prefix ``[]`` holds every anchor: its visitors are
    those with one, its ended those whose walk is the anchor alone. Visitors are distinct
    (``uniqExact``): one counts once in each figure however many times its sessions took
    that prefix. ``limit`` is at most :data:`MAX_PATHS`."""
    assert direction in DIRECTIONS and 1 <= depth <= 3 and 1 <= limit <= MAX_PATHS
    order = "arrayReverse(pages)" if direction == "previous" else "pages"
    if page is None:
        anchors = "[1]"
    else:
        anchors = "arrayFilter(i -> walk_of[i] = {journey_page:String}, arrayEnumerate(walk_of))"
    # the walks: per session its pages (reloads left out), then per anchor its walk
    sessions = (
        "SELECT any(visitor_id) AS visitor, "
        "arrayMap(v -> v.2, arraySort(groupArray((ts, toString(path))))) AS views, "
        "arrayFilter((p, before, i) -> i = 1 OR p != before, views, "
        "arrayPushFront(arrayPopBack(views), ''), arrayEnumerate(views)) AS pages, "
        f"{order} AS walk_of, {anchors} AS anchors "
        f"FROM events WHERE {_where(plan, page)} GROUP BY session_id"
    )
    walks = (
        "SELECT visitor, arraySlice(walk_of, a, {journey_span:UInt8}) AS walk, "
        "a + length(walk) - 1 = length(walk_of) AS at_end "
        f"FROM ({sessions}) ARRAY JOIN anchors AS a"
    )
    prefixes = (
        "SELECT visitor, arraySlice(walk, 1, k) AS prefix, "
        "greatest(k, 1) = length(walk) AND at_end AS is_end, "
        "k = length(walk) AND k >= 2 AS is_whole "
        f"FROM ({walks}) ARRAY JOIN range(toUInt32(length(walk) + 1)) AS k"
    )
    figures = (
        "SELECT prefix, uniqExact(visitor) AS visitors, uniqExactIf(visitor, is_end) AS ended, "
        f"uniqExactIf(visitor, is_whole) AS whole FROM ({prefixes}) GROUP BY prefix"
    )
    # the first paths by a heap of the best MAX_PATHS (groupArraySorted), and of all the
    # prefixes those of the `limit` first (and []) by a hash of the pages (a collision only
    # keeps a row more). Window functions that ranked the paths and kept each prefix with
    # the best rank of its paths sorted the 213k prefixes' rows five times over 30 days of
    # 1M events (4.4-7.9 s against 1.2-1.9 s for this, on a loaded host)
    sql = (
        "SELECT arraySlice(arrayMap(t -> t.2, top), 1, {journey_limit:UInt32}) AS paths, "
        "arrayDistinct(arrayFlatten(arrayMap(path -> arrayMap(k -> cityHash64(arraySlice("
        "path, 1, k)), range(toUInt32(length(path) + 1))), paths))) AS needed, "
        "arrayFilter(row -> length(row.1) = 0 OR has(needed, cityHash64(row.1)), rows) AS kept "
        f"FROM (SELECT groupArraySortedIf({MAX_PATHS})((-toInt64(whole), prefix), whole > 0) "
        f"AS top, groupArray((prefix, visitors, ended, whole)) AS rows FROM ({figures}))"
    )
    own: dict[str, object] = {"journey_span": depth + 1, "journey_limit": limit}
    if page is not None:
        own["journey_page"] = page
    return statement(sql, plan, Facts(), **own)
