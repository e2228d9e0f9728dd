"""The "Overview" part of the OpenAPI document (:mod:`svc.http.openapi`): the types of the
answers of :mod:`svc.http.overview` (GET /overview, /overview/timeseries) and their paths."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Annotated, Any

from msgspec import Meta, Struct

from svc.queries.overview import SORT_KEYS

Percent = Annotated[str, Meta(pattern=r"^[0-9]+\.[0-9]%$", examples=["42.5%"])]
Change = Annotated[
    float | None,
    Meta(description="Relative change in percent, one decimal; null: nothing to relate it to."),
]
PointsChange = Annotated[float | None, Meta(description="Difference in percentage points.")]
Seconds = Annotated[float, Meta(description="Seconds, averaged over visits.")]


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p.title() for p in rest)


class _Doc(Struct, rename=_camel, kw_only=True):
    """camelCase names."""


class OverviewFigures(_Doc):
    """A project's (or the totals') figures: GET /metrics' visitors, sessions (``visits``),
    pageviews, bounceRate and avgSessionDuration (``visitDuration``)."""

    visitors: int
    visits: int
    pageviews: int
    bounce_rate: Percent
    visit_duration: Seconds


class OverviewChange(_Doc):
    visitors: Change
    visits: Change
    pageviews: Change
    bounce_rate: PointsChange
    visit_duration: Change


class OverviewTotals(OverviewFigures, kw_only=True):
    """Every row summed (visitors too: those of two projects are counted apart)."""

    previous: OverviewFigures
    change: OverviewChange


class OverviewRow(OverviewTotals, kw_only=True):
    id: str
    name: str
    timezone: Annotated[str, Meta(description="The zone its days are read in.")]
    from_: date
    to: date


class Overview(_Doc):
    sort: str
    projects: list[OverviewRow]
    totals: OverviewTotals


class OverviewPoint(OverviewFigures, kw_only=True):
    time: str


class OverviewProjectSeries(_Doc):
    id: str
    name: str
    timezone: str
    points: list[OverviewPoint]


class OverviewSeries(_Doc):
    interval: str
    projects: list[OverviewProjectSeries]
    points: Annotated[list[OverviewPoint], Meta(description="The projects' points summed.")]


OVERVIEW_TYPES: dict[str, type[Struct]] = {t.__name__: t for t in (Overview, OverviewSeries)}


def overview_paths(
    settings: Any,
    secured: list[dict[str, list[str]]],
    helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
) -> dict[str, Any]:
    """The paths of the overview; ``helpers`` are :mod:`svc.http.openapi`'s ``_errors``,
    ``_json`` and ``_param``."""
    _errors, _json, _param = helpers
    days = [
        _param("from", "query", "First local day, YYYY-MM-DD.", True, type="string", format="date"),
        _param(
            "to",
            "query",
            "Last local day, YYYY-MM-DD. Default: each project's today.",
            type="string",
            format="date",
        ),
    ]
    who = (
        " Projects: a session's, those its roles may read; the admin token's, all; a secret "
        "key's or share link's, its own; a public key: 403. Each in its own time zone, over "
        "the same local days; `tz` and `filter` are a 400."
    )

    def get(summary: str, params: list[dict[str, Any]], answer: str) -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "description": summary + "." + who,
                "security": secured,
                "parameters": params,
                "responses": {
                    "200": _json(answer, summary),
                    **_errors(settings, 400, 401, 403, 429),
                },
            }
        }

    return {
        "/overview": get(
            "Visitors, visits, page views, bounce rate and duration of every project one may "
            "read, with their change against the previous period, and totals",
            [
                *days,
                _param(
                    "sort",
                    "query",
                    f"{', '.join(SORT_KEYS)}; - for descending (default -visitors).",
                ),
            ],
            "Overview",
        ),
        "/overview/timeseries": get(
            "Each readable project's series and their sum",
            [*days, _param("interval", "query", "hour, day (default), week or month.")],
            "OverviewSeries",
        ),
    }
