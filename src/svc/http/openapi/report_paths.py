"""The paths of the reports: GET /metrics and its sub-paths."""

from __future__ import annotations

from typing import Any

from svc.http.openapi.base import JSON
from svc.http.openapi.parts import PREFLIGHT, RANGE_PARAMS, _busy, _errors, _json, _param, _ref
from svc.queries.breakdown import MAX_OFFSET
from svc.queries.filters import OPERATORS
from svc.queries.journeys import MAX_DEPTH
from svc.queries.journeys import MAX_LIMIT as MAX_JOURNEYS
from svc.schema.dimensions import DIMENSIONS
from svc.schema.measurements import BREAKDOWN_KINDS
from svc.settings import Settings

#: The answers of GET /metrics/breakdown, by its ``by``: a dimension, or a report of the
#: script's extensions.
BREAKDOWN_ANSWERS = ("Breakdown", "EngagementBreakdown", "TargetBreakdown", "VitalsBreakdown")

FILTER = _param(
    "filter",
    "query",
    "Repeatable, all must hold: <dimension>:<op>:<value>; ops "
    f"{', '.join(OPERATORS)} (is and is_not take alternatives separated by |; matches and "
    f"not_matches: RE2). Dimensions: {', '.join(DIMENSIONS)}, prop:<key>.",
)


def report_paths(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    scoped = [*RANGE_PARAMS, FILTER]
    limit = _param("limit", "query", "Most rows (1-1000).", type="integer")

    def get(summary: str, params: list[dict[str, Any]], answer: str) -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "security": secured,
                "parameters": params,
                "responses": {
                    "200": _json(answer, summary),
                    **_errors(settings, 400, 401, 403, 404, 429),
                    **_busy(),
                },
            }
        }

    metrics = get(
        "Aggregate page views, sessions, bounce rate and traffic sources",
        [
            *scoped,
            _param("compare", "query", "previous_period or previous_year: adds `compare`."),
            _param("duration", "query", "events (default) or engaged: the visit duration."),
        ],
        "Metrics",
    )
    breakdowns = {"anyOf": [_ref(n) for n in BREAKDOWN_ANSWERS]}

    def answering(
        schema: dict[str, Any], summary: str, params: list[dict[str, Any]], answer: str
    ) -> dict[str, Any]:
        """:func:`get` whose 200 is ``schema`` (``answer``'s or another's)."""
        op = get(summary, params, answer)
        op["get"]["responses"]["200"]["content"][JSON]["schema"] = schema
        return op

    return {
        "/metrics": {**metrics, "options": PREFLIGHT},
        "/metrics/timeseries": get(
            "Time series by hour, day, week or month, zero-filled",
            [*scoped, _param("interval", "query", "hour, day (default), week or month.")],
            "Timeseries",
        ),
        "/metrics/breakdown": answering(
            breakdowns,
            "Metrics per value of a dimension",
            [
                *scoped,
                _param(
                    "by",
                    "query",
                    "The dimension (see `filter`), or a report of the script's extensions: "
                    + ", ".join(BREAKDOWN_KINDS)
                    + " (docs/api.md, Page measurements).",
                    True,
                ),
                limit,
                _param(
                    "offset",
                    "query",
                    f"Rows to skip (0-{MAX_OFFSET:,}).",
                    type="integer",
                    minimum=0,
                    maximum=MAX_OFFSET,
                ),
                _param(
                    "order",
                    "query",
                    "visitors, sessions, pageviews, events, bounceRate, avgSessionDuration "
                    "or value; - for descending (default -visitors).",
                ),
                _param(
                    "compare",
                    "query",
                    "previous_period or previous_year: each row gets `compare` (its value's "
                    "figures in the other range) and `change`; the answer `compare` (the range).",
                ),
            ],
            "Breakdown",
        ),
        "/metrics/vitals": get(
            "Web Vitals: p75 and good / needs improvement / poor shares, over time too",
            [
                *scoped,
                _param("interval", "query", "hour, day, week or month: adds `points`."),
                _param("compare", "query", "previous_period or previous_year: adds `compare`."),
            ],
            "Vitals",
        ),
        "/metrics/realtime": get(
            "Visitors in the last 5 minutes: their pages, sources, countries; 30 minutes by minute",
            [_param("projectId", "query", "Admin token only."), limit],
            "Realtime",
        ),
        "/metrics/goals": get(
            "Conversions of goals: event:<name> or page:<pattern with *>",
            [
                *scoped,
                _param(
                    "goal",
                    "query",
                    "Repeatable, at most 20. Without it: the project's saved goals (each with "
                    "its id, name, kind, property), `saved: true`.",
                ),
            ],
            "Goals",
        ),
        "/metrics/values": get(
            "The values of a dimension that hold a text, most visitors first (suggestions)",
            [
                *scoped,
                _param("dimension", "query", "page, source, country, prop:<key>...", True),
                _param("q", "query", "Text the values hold, any case (all when empty)."),
                _param("limit", "query", "1-100 (default 20).", type="integer"),
            ],
            "Values",
        ),
        "/metrics/funnel": get(
            "A funnel of 2 to 8 steps completed in order within a window",
            [
                *scoped,
                _param(
                    "step",
                    "query",
                    "Repeatable, 2-8, like goal; a step may be 1-10 alternatives separated by "
                    "`|` (`page:/pricing|page:/plans`), reached by any of them and counted once "
                    "per visitor. `\\|` is a literal `|`, `\\\\` a literal `\\`; an empty "
                    "alternative or more than 10 is a 400 naming `step`.",
                ),
                _param(
                    "funnel",
                    "query",
                    "A saved funnel's id, instead of `step`: its steps and window (`window` "
                    "overrides); the answer names it in `funnel`. Unknown: 404.",
                ),
                _param("window", "query", "Seconds (default 1800).", type="integer"),
            ],
            "Funnel",
        ),
        "/metrics/journeys": get(
            "The most common paths within a session from (or to) a page, 1-3 pages deep",
            [
                *scoped,
                _param(
                    "page",
                    "query",
                    "The anchor: a path as stored (`/pricing`), at most 2,048 characters. "
                    "Without it: each session's entry page (`next`) or exit page (`previous`).",
                ),
                _param("direction", "query", "next (default) or previous."),
                _param(
                    "depth",
                    "query",
                    "Pages after (before) the anchor, 1-3 (default 1).",
                    type="integer",
                    minimum=1,
                    maximum=MAX_DEPTH,
                ),
                _param(
                    "limit",
                    "query",
                    "Most paths, 1-50 (default 10).",
                    type="integer",
                    minimum=1,
                    maximum=MAX_JOURNEYS,
                ),
            ],
            "Journeys",
        ),
        "/metrics/revenue": get(
            "Revenue of purchase events per currency, and top items", [*scoped, limit], "Revenue"
        ),
        "/metrics/errors": get(
            "Exception events: count, fatal share, top descriptions, pages",
            [*scoped, limit],
            "Errors",
        ),
        "/metrics/properties": get(
            "Custom property keys, or the values of one key",
            [*scoped, limit, _param("key", "query", "A property key: list its values.")],
            "Properties",
        ),
    }
