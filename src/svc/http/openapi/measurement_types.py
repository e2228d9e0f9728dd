"""The types of the answers of the script's extensions' reports (svc.queries.measurements;
docs/api.md, Page measurements): engagement, link targets, Web Vitals."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from svc.http.openapi.base import Doc, Percent
from svc.http.openapi.report_types import (
    Change,
    Compared,
    PointsChange,
    SessionChange,
    SessionFigures,
)


class EngagementFigures(SessionFigures, kw_only=True):
    """A page's figures (as ``by=page``) and its engagement."""

    engaged_visits: Annotated[int, Meta(description="(session, page) visits with engagement.")]
    median_engaged_ms: float | None
    mean_engaged_ms: float | None
    scroll_depth: Annotated[
        dict[str, Percent],
        Meta(description="Share of the visits that reached 25, 50, 75, 100 % of the page."),
    ]


class EngagementChange(SessionChange, kw_only=True):
    engaged_visits: Change
    median_engaged_ms: Change
    mean_engaged_ms: Change
    scroll_depth: dict[str, PointsChange]


class EngagementRow(EngagementFigures, kw_only=True):
    value: str
    compare: EngagementFigures | UnsetType = UNSET
    change: EngagementChange | UnsetType = UNSET


class EngagementBreakdown(Doc):
    by: Literal["engagement"]
    rows: list[EngagementRow]
    total_rows: int
    compare: Compared | UnsetType = UNSET


class Referrer(Doc):
    value: str
    events: int


class TargetFigures(Doc):
    visitors: int
    events: int


class TargetChange(Doc):
    visitors: Change
    events: Change


class TargetRow(TargetFigures, kw_only=True):
    """A link's URL (outbound, download) or a page marked not found (404)."""

    value: str
    referrers: Annotated[list[Referrer], Meta(description="404 only.")] | UnsetType = UNSET
    compare: TargetFigures | UnsetType = UNSET
    change: TargetChange | UnsetType = UNSET


class TargetBreakdown(Doc):
    by: Literal["outbound", "download", "404"]
    rows: list[TargetRow]
    total_rows: int
    compare: Compared | UnsetType = UNSET


class VitalFigures(Doc):
    samples: int
    p75: float | None
    good: Percent
    needs_improvement: Percent
    poor: Percent


class VitalChange(Doc):
    samples: Change
    p75: Change
    good: PointsChange
    needs_improvement: PointsChange
    poor: PointsChange


class VitalsFigures(Doc):
    """Web Vitals of some page loads."""

    samples: int
    lcp: VitalFigures
    inp: VitalFigures
    cls: VitalFigures
    fcp: VitalFigures
    ttfb: VitalFigures


class VitalsChange(Doc):
    samples: Change
    lcp: VitalChange
    inp: VitalChange
    cls: VitalChange
    fcp: VitalChange
    ttfb: VitalChange


class VitalsRow(VitalsFigures, kw_only=True):
    """Web Vitals of the page loads of one value or one time."""

    value: str | UnsetType = UNSET
    time: str | UnsetType = UNSET


class VitalsValueRow(VitalsRow, kw_only=True):
    """A value's Web Vitals; with ``compare``, in the other range and how each changed."""

    compare: VitalsFigures | UnsetType = UNSET
    change: VitalsChange | UnsetType = UNSET


class VitalsBreakdown(Doc):
    by: Literal["vitals:page", "vitals:device", "vitals:country"]
    rows: list[VitalsValueRow]
    total_rows: int
    compare: Compared | UnsetType = UNSET


class Vitals(VitalsRow, kw_only=True):
    """GET /metrics/vitals."""

    interval: str | UnsetType = UNSET
    points: list[VitalsRow] | UnsetType = UNSET
    compare: VitalsRow | UnsetType = UNSET
