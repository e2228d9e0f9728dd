"""The "dropped events" part of the OpenAPI document (:mod:`svc.http.openapi`): the type of
the answer of :mod:`svc.http.dropped` (GET /projects/{project_id}/dropped) and its path."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Annotated, Any

from msgspec import Meta, Struct

from svc.http.dropped import DEFAULT_DAYS, MAX_DAYS
from svc.ingestion.dropped import REASONS, REFUSALS
from svc.meta.dropped import SAMPLES_PER_DAY, SAMPLES_PER_REASON, USER_AGENT_CHARS

_REASONS_TEXT = ", ".join(f"`{r}`" for r in REASONS)
_REFUSALS_TEXT = ", ".join(f"`{r}`" for r in REFUSALS)

ByReason = Annotated[
    dict[str, int],
    Meta(description=f"Events dropped per reason, every reason listed: {_REASONS_TEXT}."),
]
ByRefusal = Annotated[
    dict[str, int],
    Meta(
        description="Requests (not events) to POST /analytics answered 429 before the "
        f"pipeline, every one listed: {_REFUSALS_TEXT} (`rate_limit`: the `ingest_ip` or "
        "`ingest_project` rate limit; `quota`: the monthly quota, a request counted once "
        "whatever the number of its events refused)."
    ),
]


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p.title() for p in rest)


class _Doc(Struct, rename=_camel, kw_only=True):
    """camelCase names."""


class DroppedDay(_Doc):
    date: date
    reasons: ByReason
    refused: ByRefusal


class DroppedSample(_Doc):
    """A dropped request as kept: never its address."""

    time: Annotated[str, Meta(description="When it was received, ISO 8601 UTC.")]
    reason: str
    user_agent: Annotated[str, Meta(max_length=USER_AGENT_CHARS)]
    path: Annotated[str, Meta(description="The page's path, without its query.")]
    referrer_host: Annotated[str, Meta(description="The referrer's host; empty: none.")]
    country: Annotated[str | None, Meta(description="ISO 3166-1 alpha-2; null: not known.")]


class Dropped(_Doc):
    from_: date
    to: date
    days: Annotated[list[DroppedDay], Meta(description="Every UTC day of the range, in order.")]
    totals: ByReason
    total: Annotated[int, Meta(description="Events dropped in the range.")]
    refused_totals: ByRefusal
    refused_total: Annotated[int, Meta(description="Requests refused in the range.")]
    samples: Annotated[
        list[DroppedSample],
        Meta(
            description=f"The samples of the range still kept (3 days), newest first: at most "
            f"{SAMPLES_PER_DAY} a day, {SAMPLES_PER_REASON} a reason."
        ),
    ]


DROPPED_TYPES: dict[str, type[Struct]] = {"Dropped": Dropped}


def dropped_paths(
    settings: Any,
    secured: list[dict[str, list[str]]],
    helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
) -> dict[str, Any]:
    """The path of the dropped events; ``helpers`` are :mod:`svc.http.openapi`'s ``_errors``,
    ``_json`` and ``_param``."""
    _errors, _json, _param = helpers
    summary = (
        "What the bot filter and the project's exclusions dropped, and what the ingest rate "
        "limits and the quota refused, by UTC day and reason"
    )
    return {
        "/projects/{project_id}/dropped": {
            "parameters": [_param("project_id", "path", "Project id, `svc_proj_<name>`.", True)],
            "get": {
                "summary": summary,
                "description": summary
                + f". Reasons (events): {_REASONS_TEXT}; refused requests (429 before the "
                f"pipeline): {_REFUSALS_TEXT}. Counted per UTC day of receipt, recorded "
                "every `SVC_HOUSEKEEPING_INTERVAL_SECONDS`; samples are kept 3 days and hold "
                "no address. Needs `manage` (owner, admin, the admin token, the project's "
                "secret key).",
                "security": secured,
                "parameters": [
                    _param(
                        "from",
                        "query",
                        f"First UTC day, YYYY-MM-DD. Default: {DEFAULT_DAYS} days ending `to`.",
                        type="string",
                        format="date",
                    ),
                    _param(
                        "to",
                        "query",
                        f"Last UTC day, YYYY-MM-DD (default today); at most {MAX_DAYS} days.",
                        type="string",
                        format="date",
                    ),
                ],
                "responses": {
                    "200": _json("Dropped", summary),
                    **_errors(settings, 400, 401, 403, 404, 429),
                },
            },
        }
    }
