"""The pieces every type of the OpenAPI document shares: the JSON media type, the
annotated scalars, the base :class:`Doc`, and the service's own answers (errors,
acknowledgements, health)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

JSON = "application/json"
#: A time of the API: ISO 8601 in UTC (``2026-11-24T14:28:45Z``).
Timestamp = Annotated[datetime, Meta(tz=True)]
#: A share, with one decimal and a percent sign.
Percent = Annotated[str, Meta(pattern=r"^[0-9]+\.[0-9]%$", examples=["42.5%"])]
#: A range that reaches before the raw events (docs/api.md, Retention): their first day, and
#: what the answer holds of the days before it.
RawDataFrom = Annotated[
    date, Meta(description="The first day (UTC) of raw events, when the range begins before it.")
]
Notes = Annotated[list[str], Meta(description="What the answer holds of the days before it.")]


def _camel(name: str) -> str | None:
    """The JSON name of a field: camelCase (``from_`` is ``from``)."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(word.title() for word in rest)


class Doc(Struct, rename=_camel, kw_only=True):
    """A type of the document: camelCase names, absent optional fields."""


# errors and acknowledgements ----------------------------------------------------------------


class ErrorDetail(Doc):
    code: Annotated[str, Meta(description="snake_case.", examples=["invalid_request"])]
    message: Annotated[str, Meta(description="For a person.")]
    field: (
        Annotated[str, Meta(description="The field or parameter at fault (400).")] | UnsetType
    ) = UNSET
    request_id: (
        Annotated[str, Meta(description="The request's id, as in its X-Request-Id header.")]
        | UnsetType
    ) = UNSET


class Error(Doc):
    """Every error: ``{"ok": false, "error": {"code", "message"}}``."""

    ok: Literal[False]
    error: ErrorDetail


class Rejected(Doc):
    index: Annotated[int, Meta(description="The event's place in the batch, from 0.")]
    error: ErrorDetail


class Ack(Doc):
    """Events stored (or dropped on purpose: see the X-Svc-Dropped header)."""

    ok: Literal[True]
    ts: Annotated[int, Meta(description="Server time, ms since the epoch.")]
    accepted: Annotated[int, Meta(description="Batches: events stored.")] | UnsetType = UNSET
    dropped: (
        Annotated[int, Meta(description="Batches: events dropped on purpose (bots, duplicates).")]
        | UnsetType
    ) = UNSET
    rejected: (
        Annotated[list[Rejected], Meta(description="Batches: the events refused, and why.")]
        | UnsetType
    ) = UNSET


class Health(Doc):
    """Readiness and diagnostics (nothing secret)."""

    ready: bool
    status: Literal["ok", "degraded", "down"]
    pipeline: dict[str, Any] | UnsetType = UNSET
    store: dict[str, Any] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    node: dict[str, Any] | UnsetType = UNSET
