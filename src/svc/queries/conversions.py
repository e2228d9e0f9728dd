"""Goals and funnels.

A goal is ``event:<name>`` (an event of that name) or ``page:<pattern>`` (a page view whose
path matches; ``*`` matches any characters). A goal's conversions are the visitors with a
matching event in the range; its rate is conversions over all visitors in the scope (those
with an event in the range: the visitors of GET /metrics).

Without filters, goals of whole paths and event names are read as the session reports read
them (:func:`_goals_from_rollups`): the days wholly inside the range from the daily rollups'
totals, page and event rows, the other days from the session rows, the session pages and
the report events. Over 30 days of 100M events the one statement over every event (a set of
every visitor id, ~3 s on 2 cores) becomes a few small ones. With filters, a pattern with
``*`` (its visitors over several paths do not add up from the rollups' rows per path) or a
range that reaches days before the raw events (svc.retention: those days count nothing
here), every figure comes from one statement over the events (:func:`goal_sql.goals`).

A funnel is 2 to 8 steps, completed in order by one visitor within ``window`` seconds of
the first step (ClickHouse ``windowFunnel``), read from the report events when every step is
an event other than a page view (:func:`funnel_sql.funnel`). A step is 1 to
:data:`MAX_ALTERNATIVES` goals separated by ``|`` (:func:`parse_step`): one of them reached
reaches the step, and a visitor counts once per step however many of them it matches (the
step's condition is their disjunction, per event). Over more visitors
than ``SVC_FUNNEL_ROLLED_VISITORS`` (as the rollups count them), without filters and with
steps of whole paths and event names, the rolled days are read from ``visitor_steps``
(:func:`funnel_sql.funnel_step_levels`: windowFunnel per visitor's row, no GROUP BY of
millions of visitors, for those with the first two steps; those with a first step counted
per day, :func:`funnel_sql.funnel_step_firsts`), the other days' sessions from the events;
else, over more than ``SVC_FUNNEL_PASS_VISITORS``, in passes by session day. (Over 30 days
ending today: 1M events, 0.29M visitors, 70 ms over the events, 118 ms from
``visitor_steps``; 10M, 2.9M visitors, 449-498 against 183 ms.) Steps with alternatives are
read there too, each alternative's key standing for the step; a first step with several
counts its visitors from ``visitor_steps`` on every rolled day, as the per-key
``step_visitors`` rows do not add up over a visitor with two of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.plan import (
    Facts,
    FunnelPass,
    Needs,
    Plan,
    Query,
    day_versions,
    funnel_passes,
    plan,
)
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import funnels as funnel_sql
from svc.queries.sql import goals as goal_sql
from svc.storage.events import EventStore

MAX_GOALS = 20
#: At most this many alternatives in one funnel step (``page:/pricing|page:/plans``).
MAX_ALTERNATIVES = 10

#: A funnel step: its alternatives, each (kind, target) as :func:`parse_goal` gives them.
Step = tuple[tuple[str, str], ...]


def parse_goal(goal: str, field: str = "goal") -> tuple[str, str]:
    """A goal as (kind, target): ``event`` and a name, or ``page`` and a path pattern."""
    kind, _, target = goal.partition(":")
    if not target or kind not in ("event", "page"):
        raise InvalidRequest(
            f"`{field}` must be event:<name> or page:<path pattern>, got {goal!r}", field=field
        )
    return kind, target


def split_step(step: str) -> list[str]:
    r"""The alternatives of a funnel step as written: split at each ``|`` not escaped, with
    ``\|`` read as a literal ``|`` and ``\\`` as a literal ``\`` (any other backslash is kept
    as written, so ``page:/a\b`` is the path ``/a\b``)."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(step):
        c = step[i]
        if c == "\\" and i + 1 < len(step) and step[i + 1] in "|\\":
            current.append(step[i + 1])
            i += 2
            continue
        if c == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


def parse_step(step: str) -> Step:
    """A funnel step as its alternatives, in the order written, each as :func:`parse_goal`
    parses a goal (``event:<name>`` or ``page:<path pattern>``); a repeated one is kept once.
    Raises :class:`InvalidRequest` naming ``step`` for an empty alternative (``page:/a|``,
    ``|``), one that is not a goal, or more than :data:`MAX_ALTERNATIVES`."""
    written = split_step(step)
    if len(written) > MAX_ALTERNATIVES:
        raise InvalidRequest(
            f"a `step` has at most {MAX_ALTERNATIVES} alternatives separated by |, "
            f"got {len(written)} in {step!r}",
            field="step",
        )
    if any(not alternative for alternative in written):
        raise InvalidRequest(f"a `step` has an empty alternative: {step!r}", field="step")
    return tuple(dict.fromkeys(parse_goal(alternative, "step") for alternative in written))


def query_goals(store: EventStore, query: Query, goals: list[str]) -> dict[str, Any]:
    if not goals:
        raise InvalidRequest("name at least one `goal`", field="goal")
    if len(goals) > MAX_GOALS:
        raise InvalidRequest(f"at most {MAX_GOALS} goals", field="goal")
    targets = [parse_goal(g) for g in goals]
    p = plan(query)
    runner = Runner(store)
    if from_rollups(p, targets):
        total, figures = _goals_from_rollups(runner, p, targets)
    else:  # event-level: no facts needed
        row = runner.named(goal_sql.goals(p, Facts(), targets))[0]
        total = int(row["visitors"])
        figures = [(int(row[f"v{i}"]), int(row[f"e{i}"])) for i in range(len(targets))]
    return {
        "visitors": total,
        "goals": [
            {
                "goal": g,
                "visitors": visitors,
                "events": events,
                "conversionRate": percent(visitors, total),
            }
            for g, (visitors, events) in zip(goals, figures, strict=True)
        ],
    }


def from_rollups(p: Plan, targets: Sequence[tuple[str, str]]) -> bool:
    """Whether the goals are read as the session reports read them (see the module
    docstring): no filters, no page pattern with ``*``, no day before the raw events."""
    whole = all(kind == "event" or "*" not in target for kind, target in targets)
    return whole and not p.filters and p.days_before_raw is None


def _goals_from_rollups(
    runner: Runner, p: Plan, targets: Sequence[tuple[str, str]]
) -> tuple[int, list[tuple[int, int]]]:
    """The visitors in scope and per goal its visitors and events: on the rolled-up days
    from the rollups (the totals, the page and event rows); on the others from the session
    rows (the visitors, and the page views for ``event:page_view``), the session pages (the
    page goals, corrected at the ends of the range) and the report events (the other event
    goals), side by side. Each visitor id belongs to one day's sessions, so the two parts'
    visitors add up, as GET /metrics adds them."""
    paths = sorted({t for kind, t in targets if kind == "page"})
    names = sorted({t for kind, t in targets if kind == "event"})
    others = [n for n in names if n != "page_view"]
    facts = runner.facts(p, Needs(edges=True, page_edges=bool(paths), rollups=True))
    stmts = [goal_sql.goal_sessions(p, facts)]
    if paths:
        stmts.append(goal_sql.goal_pages(p, facts, paths))
    if others:
        stmts.append(goal_sql.goal_events(p, facts, others))
    if facts.rolled:
        stmts.append(goal_sql.goal_rollups(p, facts, paths, names))
    results = iter(runner.together(*stmts))
    session = next(results)[0]
    # (dimension, value) -> (visitors, events): page views for a page, events for a name
    found: dict[tuple[str, str], list[int]] = {
        ("", ""): [int(session["visitors"]), 0],
        ("event", "page_view"): [int(session["viewers"]), int(session["pageviews"])],
    }

    def add(key: tuple[str, str], visitors: Any, events: Any) -> None:
        figures = found.setdefault(key, [0, 0])
        figures[0] += int(visitors)
        figures[1] += int(events)

    for row in next(results) if paths else ():
        add(("page", row["value"]), row["visitors"], row["pageviews"])
    for row in next(results) if others else ():
        add(("event", row["value"]), row["visitors"], row["events"])
    for row in next(results, ()):
        pageviews = row["dimension"] == "page"
        add(
            (row["dimension"], row["value"]),
            row["visitors"],
            row["pageviews" if pageviews else "events"],
        )
    figures = [found.get(("page" if kind == "page" else "event", t), [0, 0]) for kind, t in targets]
    return found[("", "")][0], [(v, e) for v, e in figures]


def query_funnel(
    store: EventStore, query: Query, steps: list[str], window_seconds: int
) -> dict[str, Any]:
    """The funnel of ``steps`` (each as :func:`parse_step` reads it) under ``query``: per
    step, as written, the visitors who reached it in order within ``window_seconds`` of their
    first step, its conversion from the first step and its drop-off from the one before.
    Raises :class:`InvalidRequest` naming ``step`` or ``window`` for a malformed request."""
    if not 2 <= len(steps) <= 8:
        raise InvalidRequest("a funnel has 2 to 8 `step`s", field="step")
    if not 1 <= window_seconds <= 30 * 86400:
        raise InvalidRequest("`window` must be 1 second to 30 days", field="window")
    targets = [parse_step(s) for s in steps]
    p, runner = plan(query), Runner(store)
    reached: dict[int, int] = {}
    # About how many visitors: one statement over the events holds up to this many
    per_pass = store.settings.funnel_pass_visitors
    visitors = int(runner.rows(funnel_sql.funnel_visitors(p))[0][0] or 0)
    rolled_from = store.settings.funnel_rolled_visitors
    facts = _step_days(p, runner, targets) if visitors > rolled_from else Facts()
    if facts.rolled:  # the rolled days from visitor_steps, beside the others' events
        edges = _edge_days(p, facts)
        levels, firsts, others = runner.together(
            funnel_sql.funnel_step_levels(p, facts.rolled, edges, targets, window_seconds),
            funnel_sql.funnel_step_firsts(p, facts.rolled, edges, targets),
            funnel_sql.funnel(p, facts, targets, window_seconds),
        )
        # those with a first step and no later level are at level 1
        past_first = sum(int(r["visitors"]) for r in levels)
        first_only = int(firsts[0]["visitors"] or 0) - past_first
        results = [levels, [{"level": 1, "visitors": first_only}], others]
    else:  # the passes one after the other: each holds its visitors' states
        passes: tuple[FunnelPass | None, ...] = _passes(p, runner, visitors, per_pass)
        results = [
            runner.named(funnel_sql.funnel(p, facts, targets, window_seconds, part))
            for part in passes or (None,)
        ]
    for rows in results:
        for r in rows:
            reached[int(r["level"])] = reached.get(int(r["level"]), 0) + int(r["visitors"])
    counts = [sum(n for level, n in reached.items() if level >= i + 1) for i in range(len(steps))]
    out = []
    for i, step in enumerate(steps):
        previous = counts[i - 1] if i else counts[0]
        out.append(
            {
                "step": step,
                "visitors": counts[i],
                "conversionRate": percent(counts[i], counts[0]),
                "dropOff": previous - counts[i],
                "dropOffRate": percent(previous - counts[i], previous),
            }
        )
    return {"windowSeconds": window_seconds, "steps": out}


def _step_days(p: Plan, runner: Runner, targets: Sequence[Step]) -> Facts:
    """The rolled-up days a funnel reads from ``visitor_steps`` (storage/migrations/017), as
    the facts' rolled days (the events are read for the others' sessions alone), with the
    long sessions that cross an end of the range: the days from the one before the range
    (or of such a long session) to its last that have those rows, when there are no
    filters, no step's alternative is ``event:page_view`` or a page pattern with ``*``, the
    range is all raw days, and no path or event name of those days shares an alternative's
    key (else none)."""
    whole = all(
        (kind == "page" and "*" not in target) or (kind == "event" and target != "page_view")
        for step in targets
        for kind, target in step
    )
    if not whole or p.filters or p.days_before_raw is not None:
        return Facts()
    facts = runner.facts(p, Needs(edges=True))
    first = min({p.params["day0"], *facts.long_days})
    last = p.params["end_day0"]
    days = day_versions(runner.rows(funnel_sql.funnel_step_days(p, first, last)))
    if not days or runner.rows(funnel_sql.step_collisions(p, days, targets))[0][0]:
        return Facts()
    return Facts(rolled=days, long=facts.long)


def _edge_days(p: Plan, facts: Facts) -> list[date]:
    """The days of ``facts.rolled`` whose visitors may have events outside the range: those
    outside :attr:`Plan.rollup_span` (the days whose sessions are wholly inside it, but the
    long ones) and those of the long sessions that cross an end."""
    span = p.rollup_span
    inside = (lambda day: span[0] <= day <= span[1]) if span else (lambda day: False)
    return [d for d, _ in facts.rolled if not inside(d) or d in facts.long_days]


def _passes(p: Plan, runner: Runner, visitors: int, per_pass: int) -> tuple[FunnelPass, ...]:
    """The passes of a funnel under ``p`` over about ``visitors`` (the daily rollups'
    count; none: one statement), with the long sessions' spans (read only when there are
    several)."""
    if visitors <= per_pass:
        return ()
    return funnel_passes(p, visitors, per_pass, runner.rows(funnel_sql.long_session_spans(p)))
