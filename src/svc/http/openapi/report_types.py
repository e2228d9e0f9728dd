"""The types of the reports' answers (GET /metrics and its sub-paths), but for the
script's extensions' (:mod:`.measurement_types`)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from svc.http.openapi.base import Doc, Notes, Percent, RawDataFrom


class Metrics(Doc):
    """The aggregate of a range."""

    pageviews: int
    sessions: int
    bounce_rate: Percent
    traffic_sources: Annotated[
        dict[str, int],
        Meta(description="Sessions by source.", examples=[{"direct": 10, "google": 4}]),
    ]
    visitors: int | UnsetType = UNSET
    events: int | UnsetType = UNSET
    bounces: int | UnsetType = UNSET
    avg_session_duration: Annotated[float, Meta(description="Seconds.")] | UnsetType = UNSET
    views_per_session: float | UnsetType = UNSET
    duration: (
        Annotated[Literal["engaged"], Meta(description="duration=engaged: engaged time.")]
        | UnsetType
    ) = UNSET
    from_: date | UnsetType = UNSET
    to: date | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    project_id: str | UnsetType = UNSET
    raw_data_from: RawDataFrom | UnsetType = UNSET
    notes: Notes | UnsetType = UNSET


#: How a count or a time changed from the other range (``compare``; docs/api.md).
Change = Annotated[
    float | None,
    Meta(description="Relative change in percent, one decimal; null: nothing to relate it to."),
]
#: How a share changed from the other range.
PointsChange = Annotated[float | None, Meta(description="Difference in percentage points.")]


class Compared(Doc):
    """The other range of ``compare`` (previous_period, previous_year)."""

    from_: date
    to: date


class SessionFigures(Doc):
    """The session figures of one value (a breakdown) or one time (a series)."""

    visitors: int
    sessions: int
    pageviews: int
    events: int
    bounce_rate: str
    avg_session_duration: Annotated[float, Meta(description="Seconds.")]


class SessionChange(Doc):
    visitors: Change
    sessions: Change
    pageviews: Change
    events: Change
    bounce_rate: PointsChange
    avg_session_duration: Change


class SessionRow(SessionFigures, kw_only=True):
    """A value's session figures; with ``compare``, its figures in the other range and how
    each changed."""

    value: str | UnsetType = UNSET
    compare: SessionFigures | UnsetType = UNSET
    change: SessionChange | UnsetType = UNSET


class Point(SessionFigures, kw_only=True):
    time: str


class Timeseries(Doc):
    interval: str
    points: list[Point]
    raw_data_from: RawDataFrom | UnsetType = UNSET
    notes: Notes | UnsetType = UNSET


class Breakdown(Doc):
    by: str
    rows: list[SessionRow]
    total_rows: Annotated[int, Meta(description="Rows in all, past `limit` and `offset`.")]
    compare: Compared | UnsetType = UNSET
    raw_data_from: RawDataFrom | UnsetType = UNSET
    notes: Notes | UnsetType = UNSET


class PageVisitors(Doc):
    value: str
    visitors: int


class RealtimeMinute(Doc):
    time: Annotated[str, Meta(description="The UTC minute, YYYY-MM-DDTHH:MM.")]
    visitors: int


class Realtime(Doc):
    """GET /metrics/realtime: the visitors of the last `windowSeconds` and where they are."""

    visitors: int
    window_seconds: int
    pages: list[PageVisitors]
    sources: Annotated[
        list[PageVisitors], Meta(description="Their sessions' sources, most visitors first.")
    ]
    countries: Annotated[
        list[PageVisitors], Meta(description="Their sessions' countries (ISO 3166-1, '' unknown).")
    ]
    minutes: Annotated[
        list[RealtimeMinute],
        Meta(description="Visitors per minute of the last 30, the current one last."),
    ]


class Goal(Doc):
    goal: str
    visitors: int
    events: int
    conversion_rate: str
    # a saved goal's (GET /metrics/goals without `goal`: svc.saved.goals)
    id: Annotated[str, Meta(description="Saved goals: its id.")] | UnsetType = UNSET
    name: Annotated[str, Meta(description="Saved goals: its name.")] | UnsetType = UNSET
    kind: Annotated[str, Meta(description="Saved goals: event or page.")] | UnsetType = UNSET
    property: dict[str, str] | UnsetType = UNSET


class Goals(Doc):
    visitors: int
    goals: list[Goal]
    saved: Annotated[bool, Meta(description="The project's saved goals.")] | UnsetType = UNSET


class DimensionValue(Doc):
    value: str
    visitors: int


class Values(Doc):
    dimension: str
    q: Annotated[str, Meta(description="The text the values hold, as sent (any case).")]
    values: list[DimensionValue]


class FunnelStep(Doc):
    step: str
    visitors: int
    conversion_rate: str
    drop_off: int
    drop_off_rate: str


class SavedFunnelRef(Doc):
    id: str
    name: str


class Funnel(Doc):
    window_seconds: int
    steps: list[FunnelStep]
    funnel: SavedFunnelRef | UnsetType = UNSET  # with `funnel=<id>`


class JourneyStep(Doc):
    page: str
    visitors: Annotated[int, Meta(description="Visitors who reached this page along the path.")]
    drop_off: Annotated[
        int,
        Meta(
            description="Of those, visitors with no further page view in the session (for "
            "`previous`: no earlier one, they entered here)."
        ),
    ]
    drop_off_rate: str


class JourneyPath(Doc):
    pages: Annotated[
        list[str], Meta(description="In time order: the anchor first (next), last (previous).")
    ]
    visitors: Annotated[int, Meta(description="Visitors whose walk from an anchor was this.")]
    steps: list[JourneyStep]


class Journeys(Doc):
    """GET /metrics/journeys."""

    page: Annotated[str | None, Meta(description="The anchor; null: the entry or exit.")]
    direction: Literal["next", "previous"]
    depth: int
    visitors: Annotated[int, Meta(description="Visitors with an anchor.")]
    drop_off: Annotated[int, Meta(description="Of those, visitors with no page beyond it.")]
    drop_off_rate: str
    paths: list[JourneyPath]
    from_: date
    to: date
    timezone: str
    project_id: str | UnsetType = UNSET
    raw_data_from: RawDataFrom | UnsetType = UNSET
    notes: Notes | UnsetType = UNSET


class CurrencyRevenue(Doc):
    currency: str
    revenue: float
    orders: int
    average_order_value: float


class ItemRevenue(Doc):
    item_id: str
    item_name: str | None
    currency: str
    quantity: float
    revenue: float


class Revenue(Doc):
    currencies: list[CurrencyRevenue]
    top_items: list[ItemRevenue]


class ErrorDescription(Doc):
    description: str
    count: int
    fatal: int
    visitors: int


class PageCount(Doc):
    value: str
    count: int


class Errors(Doc):
    errors: int
    fatal: int
    fatal_share: str
    top: list[ErrorDescription]
    pages: list[PageCount]


class PropertyKey(Doc):
    key: str
    events: int


class PropertyValue(Doc):
    value: str
    events: int
    visitors: int


class Properties(Doc):
    """The keys, or with `key` the values of one key."""

    keys: list[PropertyKey] | UnsetType = UNSET
    values: list[PropertyValue] | UnsetType = UNSET
