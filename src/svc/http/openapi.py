"""The OpenAPI 3.1 document served at /openapi.json.

Its schemas are generated from types (``msgspec.json.schema_components``): the event from
:class:`svc.schema.wire.RawEvent`, whose limits are the validator's, and every answer from the
types below, which tests check real answers against (tests/test_openapi.py). The paths are
written here, with what each operation does; their limits come from the settings and from the
modules that enforce them, their dimensions and operators from the query side. A test checks
that every route of the app is documented and nothing else is.
"""

from __future__ import annotations

import functools
from datetime import date, datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from svc import __version__
from svc.http.accounts_doc import ACCOUNT_TYPES, account_paths
from svc.http.dropped_doc import DROPPED_TYPES, dropped_paths
from svc.http.mail import openapi_paths as mail_paths
from svc.http.overview_doc import OVERVIEW_TYPES, overview_paths
from svc.http.projects import NAME as PROJECT_NAME
from svc.http.saved_doc import SAVED_TYPES, saved_paths
from svc.http.sso_doc import SSO_TYPES, sso_paths
from svc.queries.breakdown import MAX_OFFSET
from svc.queries.filters import OPERATORS
from svc.queries.journeys import MAX_DEPTH
from svc.queries.journeys import MAX_LIMIT as MAX_JOURNEYS
from svc.schema.dimensions import DIMENSIONS
from svc.schema.measurements import BREAKDOWN_KINDS
from svc.schema.wire import RawEvent
from svc.settings import Settings

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


# reports ------------------------------------------------------------------------------------


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


# the extensions' reports (svc.queries.measurements; docs/api.md, Page measurements) ---------


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


# projects and keys --------------------------------------------------------------------------


class ProjectOptions(Doc):
    exclude_addresses: list[str] | UnsetType = UNSET
    exclude_paths: list[str] | UnsetType = UNSET
    only_own_domains: bool | UnsetType = UNSET
    monthly_quota: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: the project's own events a month "
                "(0: unlimited; null: its plan's). See docs/limits.md."
            ),
        ]
        | UnsetType
    ) = UNSET
    retention_months: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: months of raw events kept, 0-1200 (0: forever; "
                "null: SVC_RETENTION_MONTHS). See docs/api.md, Retention.",
            ),
        ]
        | UnsetType
    ) = UNSET
    rollup_retention_months: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: months of daily rollups kept, 0-1200 (0: "
                "forever; null: SVC_ROLLUP_RETENTION_MONTHS); never less than the raw events.",
            ),
        ]
        | UnsetType
    ) = UNSET


class Project(Doc):
    """A project. Those who may manage it (admin token, its secret key, an owner or admin of
    its team) see every field; the others (viewer, editor, guest) only ``id``, ``name``,
    ``timezone`` and ``role``."""

    id: Annotated[str, Meta(examples=["svc_proj_acme"])] | UnsetType = UNSET
    name: str | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    domains: list[str] | UnsetType = UNSET
    plan: str | UnsetType = UNSET
    options: dict[str, Any] | UnsetType = UNSET
    created_at: Timestamp | UnsetType = UNSET
    updated_at: Timestamp | UnsetType = UNSET
    role: (
        Annotated[str, Meta(description="GET /projects with a session: the account's role.")]
        | UnsetType
    ) = UNSET


class ProjectInput(Doc):
    name: Annotated[str, Meta(pattern=PROJECT_NAME.pattern)] | UnsetType = UNSET
    timezone: Annotated[str, Meta(description="An IANA time zone.")] = "UTC"
    domains: list[str] | UnsetType = UNSET
    options: ProjectOptions | UnsetType = UNSET
    plan: (
        Annotated[
            str,
            Meta(
                description="Admin token only: a plan of SVC_PLANS (free, pro, business, "
                "unlimited by default)."
            ),
        ]
        | UnsetType
    ) = UNSET


class Projects(Doc):
    projects: list[Project]


KeyKind = Literal["public", "secret", "share"]


class Key(Doc):
    id: str | UnsetType = UNSET
    kind: KeyKind | UnsetType = UNSET
    scopes: list[Literal["ingest", "read", "manage"]] | UnsetType = UNSET
    hint: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    created_at: Timestamp | UnsetType = UNSET
    last_used_at: Timestamp | UnsetType | None = UNSET
    revoked_at: Timestamp | UnsetType | None = UNSET
    expires_at: Timestamp | UnsetType | None = UNSET
    key: Annotated[str, Meta(description="The clear key: only when it is made.")] | UnsetType = (
        UNSET
    )


class KeyInput(Doc):
    kind: KeyKind | UnsetType = UNSET


class Keys(Doc):
    keys: list[Key]


EdgeProvider = Literal["", "cloudflare-workers", "vercel-edge", "lambda-edge", "bun", "other"]


class EdgeSecret(Doc):
    """A secret an edge signs the visitor's headers with, for its project alone
    (docs/edge.md)."""

    id: Annotated[str, Meta(description="The key id: `<id>` of `svc_edge_<id>_<random>`.")]
    project_id: str
    provider: EdgeProvider
    created_at: Timestamp
    secret: (
        Annotated[str, Meta(description="The secret in clear: only when it is made.")] | UnsetType
    ) = UNSET


class EdgeSecretInput(Doc):
    provider: EdgeProvider | UnsetType = UNSET


class EdgeSecrets(Doc):
    edge_secrets: list[EdgeSecret]


class Health(Doc):
    """Readiness and diagnostics (nothing secret)."""

    ready: bool
    status: Literal["ok", "degraded", "down"]
    pipeline: dict[str, Any] | UnsetType = UNSET
    store: dict[str, Any] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    node: dict[str, Any] | UnsetType = UNSET


#: The answers of GET /metrics/breakdown, by its ``by``: a dimension, or a report of the
#: script's extensions.
BREAKDOWN_ANSWERS = ("Breakdown", "EngagementBreakdown", "TargetBreakdown", "VitalsBreakdown")

#: The types of the document's schemas, by their names in it.
TYPES: dict[str, type[Struct]] = {
    "Event": RawEvent,
    **{
        t.__name__: t
        for t in (
            Error,
            Ack,
            Metrics,
            Timeseries,
            Breakdown,
            EngagementBreakdown,
            TargetBreakdown,
            VitalsBreakdown,
            Vitals,
            Realtime,
            Goals,
            Values,
            Funnel,
            Journeys,
            Revenue,
            Errors,
            Properties,
            Project,
            ProjectInput,
            Projects,
            Key,
            KeyInput,
            Keys,
            EdgeSecret,
            EdgeSecretInput,
            EdgeSecrets,
            Health,
        )
    },
    **ACCOUNT_TYPES,  # svc.http.accounts_doc
    **DROPPED_TYPES,  # svc.http.dropped_doc
    **OVERVIEW_TYPES,  # svc.http.overview_doc
    **SAVED_TYPES,  # svc.http.saved_doc
    **SSO_TYPES,  # svc.http.sso_doc
}


def schemas() -> dict[str, Any]:
    """The document's schemas, generated from :data:`TYPES` (and the types they hold)."""
    out: dict[str, Any] = msgspec.json.decode(_schemas())  # a copy of its own each time
    return out


@functools.cache
def _schemas() -> bytes:
    _, components = msgspec.json.schema_components(
        list(TYPES.values()), ref_template="#/components/schemas/{name}"
    )
    event = components.pop("RawEvent")
    event["title"] = "Event"
    components["Event"] = event
    return msgspec.json.encode(components)


# the paths ----------------------------------------------------------------------------------


def _ref(name: str) -> dict[str, str]:
    assert name in TYPES, name
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": _ref(name)}}}


def _param(
    name: str, where: str, description: str, required: bool = False, **schema: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": required,
        "description": description,
        "schema": schema or {"type": "string"},
    }


PROJECT_ID = _param("project_id", "path", "Project id, `svc_proj_<name>`.", True)
KEY_ID = _param("key_id", "path", "Key id, `key_...` (not the key itself).", True)
EDGE_SECRET_ID = _param(
    "secret_id", "path", "Edge secret id, `<id>` of `svc_edge_<id>_<random>`.", True
)
RANGE_PARAMS = [
    _param(
        "from", "query", "First day, YYYY-MM-DD (included).", True, type="string", format="date"
    ),
    _param(
        "to",
        "query",
        "Last day, YYYY-MM-DD (included). Default: today.",
        type="string",
        format="date",
    ),
    _param("tz", "query", "IANA time zone of the days. Default: the project's."),
    _param("projectId", "query", "The project; required with the admin token, else the key's own."),
]
FILTER = _param(
    "filter",
    "query",
    "Repeatable, all must hold: <dimension>:<op>:<value>; ops "
    f"{', '.join(OPERATORS)} (is and is_not take alternatives separated by |; matches and "
    f"not_matches: RE2). Dimensions: {', '.join(DIMENSIONS)}, prop:<key>.",
)
PREFLIGHT = {"summary": "CORS preflight", "responses": {"204": {"description": "Allowed."}}}


def _errors(settings: Settings, *statuses: int) -> dict[str, Any]:
    text = {
        400: "Invalid request; `error.field` names the field.",
        401: "Missing (`missing_api_key`) or invalid (`invalid_api_key`) credential.",
        403: "Valid credential used for another project or outside its scopes (`forbidden`).",
        404: "No such resource (`not_found`).",
        409: "Conflict with an existing resource (`conflict`).",
        413: f"Body over {settings.max_body_bytes:,} bytes or batch over "
        f"{settings.max_batch_events:,} events (`payload_too_large`).",
        429: "Rate limit (`rate_limited`) or monthly quota (`quota_exceeded`); see Retry-After.",
        503: "Events cannot be stored right now (`unavailable`); see Retry-After.",
    }
    return {str(s): _json("Error", text[s]) for s in statuses}


def _busy() -> dict[str, Any]:
    """The 503 of a read or an export the read scheduler did not admit (svc.reads)."""
    return {
        "503": _json(
            "Error",
            "The store is busy (`busy`): the read could not start within "
            "SVC_READ_QUEUE_SECONDS (its project's share of reads, or every read slot, was "
            "taken), or needed more memory than one read may take; see Retry-After.",
        )
    }


def _busy_too(paths: dict[str, Any]) -> dict[str, Any]:
    """``paths`` (reads of the overview, admitted as reads), each GET with the 503 busy."""
    for item in paths.values():
        item["get"]["responses"].update(_busy())
    return paths


def _analytics(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    batch = {
        "type": "array",
        "items": _ref("Event"),
        "minItems": 1,
        "maxItems": settings.max_batch_events,
    }
    return {
        "post": {
            "summary": "Ingest one event or a batch",
            "description": 'Body: an event, an array of events, or {"events": [...]}, of at '
            f"most {settings.max_body_bytes:,} bytes. A 200 means the events are on disk. "
            "Browsers may send a public key as `?key=` with a text/plain body.",
            "security": [*secured, {"queryKey": []}],
            "parameters": [_param("key", "query", "A public key (browsers only).")],
            "requestBody": {
                "required": True,
                "content": {
                    JSON: {
                        "schema": {
                            "oneOf": [
                                _ref("Event"),
                                batch,
                                {
                                    "type": "object",
                                    "required": ["events"],
                                    "properties": {"events": batch},
                                },
                            ]
                        }
                    },
                    "text/plain": {"schema": {"type": "string"}},
                },
            },
            "responses": {
                "200": _json("Ack", "Stored (or dropped on purpose: see X-Svc-Dropped)."),
                **_errors(settings, 400, 401, 403, 413, 429, 503),
            },
        },
        "options": PREFLIGHT,
    }


def _reports(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
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


def _projects(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    def op(summary: str, responses: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"summary": summary, "security": secured, **more, "responses": responses}

    def body(name: str, required: bool = True) -> dict[str, Any]:
        return {"required": required, "content": {JSON: {"schema": _ref(name)}}}

    return {
        "/projects": {
            "post": op(
                "Create a project and its public and secret keys (admin token)",
                {
                    "201": _json(
                        "Project", "The project, with `keys` {public, secret} in clear, once."
                    ),
                    **_errors(settings, 400, 401, 403, 409),
                },
                requestBody=body("ProjectInput"),
            ),
            "get": op(
                "List projects (admin: all; secret key: its own; a session: those it reaches, "
                "settings only where it may manage)",
                {"200": _json("Projects", "The projects."), **_errors(settings, 401, 403)},
            ),
        },
        "/projects/{project_id}": {
            "parameters": [PROJECT_ID],
            "get": op(
                "One project with its keys and this month's usage",
                {"200": _json("Project", "The project."), **_errors(settings, 401, 403, 404)},
            ),
            "patch": op(
                "Change timezone, domains, options (or plan, admin only)",
                {
                    "200": _json("Project", "The changed project."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("ProjectInput"),
            ),
            "delete": op(
                "Delete a project, its keys and events (admin token)",
                {"200": {"description": "Deleted."}, **_errors(settings, 401, 403, 404)},
            ),
        },
        "/projects/{project_id}/keys": {
            "parameters": [PROJECT_ID],
            "get": op(
                "List keys (never clear values)",
                {"200": _json("Keys", "The keys."), **_errors(settings, 401, 403, 404)},
            ),
            "post": op(
                "Create a key (public, secret or share)",
                {
                    "201": _json("Key", "The key, with `key` in clear, once."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("KeyInput", required=False),
            ),
        },
        "/projects/{project_id}/keys/{key_id}": {
            "parameters": [PROJECT_ID, KEY_ID],
            "delete": op(
                "Revoke a key",
                {"200": _json("Key", "The revoked key."), **_errors(settings, 401, 403, 404)},
            ),
        },
        "/projects/{project_id}/keys/{key_id}/rotate": {
            "parameters": [PROJECT_ID, KEY_ID],
            "post": op(
                "Replace a key: the new one is shown once, the old one is revoked",
                {
                    "201": _json("Key", "The new key, with `key` in clear and `replaces`."),
                    **_errors(settings, 401, 403, 404, 409),
                },
            ),
        },
        "/projects/{project_id}/edge-secrets": {
            "parameters": [PROJECT_ID],
            "get": op(
                "List the project's edge secrets (never their values)",
                {
                    "200": _json("EdgeSecrets", "The edge secrets."),
                    **_errors(settings, 401, 403, 404),
                },
            ),
            "post": op(
                "Register a new edge secret that signs for this project alone (docs/edge.md)",
                {
                    "201": _json("EdgeSecret", "The secret, with `secret` in clear, once."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("EdgeSecretInput", required=False),
            ),
        },
        "/projects/{project_id}/edge-secrets/{secret_id}": {
            "parameters": [PROJECT_ID, EDGE_SECRET_ID],
            "delete": op(
                "Revoke an edge secret: what it signs is ignored from then on",
                {"200": {"description": "Revoked."}, **_errors(settings, 401, 403, 404)},
            ),
        },
    }


def _pages(settings: Settings) -> dict[str, Any]:
    def html(summary: str, *params: dict[str, Any]) -> dict[str, Any]:
        ok = {"description": "HTML.", "content": {"text/html": {"schema": {"type": "string"}}}}
        return {"get": {"summary": summary, "parameters": list(params), "responses": {"200": ok}}}

    return {
        "/svc/js": {
            "get": {
                "summary": "The browser script",
                "responses": {
                    "200": {
                        "description": "JavaScript.",
                        "content": {"application/javascript": {"schema": {"type": "string"}}},
                    }
                },
            },
            "head": {
                "summary": "The browser script's headers",
                "responses": {"200": {"description": "Headers only."}},
            },
        },
        "/svc/js/{extensions}": {
            "parameters": [
                _param(
                    "extensions",
                    "path",
                    "Comma-separated opt-in extensions, any order: 404, downloads, engagement, "
                    "outbound, vitals (tracker/README.md).",
                    True,
                )
            ],
            "get": {
                "summary": "The browser script with opt-in extensions",
                "responses": {
                    "200": {
                        "description": "JavaScript.",
                        "content": {"application/javascript": {"schema": {"type": "string"}}},
                    },
                    **_errors(settings, 404),
                },
            },
            "head": {
                "summary": "The extended browser script's headers",
                "responses": {"200": {"description": "Headers only."}, **_errors(settings, 404)},
            },
        },
        "/": html("The dashboard (sign in with a secret key or the admin token)"),
        "/dashboard": html("The dashboard"),
        "/dashboard/assets/{path}": {
            "get": {
                "summary": "The dashboard's hashed, immutable assets",
                "parameters": [_param("path", "path", "Asset file.", True)],
                "responses": {"200": {"description": "A file."}, **_errors(settings, 404)},
            }
        },
        "/share/{token}": html(
            "A read-only public dashboard", _param("token", "path", "A share token.", True)
        ),
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1."}},
            }
        },
    }


def _paths(settings: Settings) -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"bearer": []}]
    return {
        "/analytics": _analytics(settings, secured),
        **_reports(settings, secured),
        **_busy_too(overview_paths(settings, secured, (_errors, _json, _param))),  # overview_doc
        "/export": {
            "get": {
                "summary": "Raw events of a range as NDJSON, CSV or Parquet",
                "security": secured,
                "parameters": [
                    *RANGE_PARAMS,
                    _param("format", "query", "ndjson (default), csv or parquet."),
                ],
                "responses": {
                    "200": {
                        "description": "The events, oldest first.",
                        "content": {
                            "application/x-ndjson": {"schema": {"type": "string"}},
                            "text/csv": {"schema": {"type": "string"}},
                            "application/vnd.apache.parquet": {
                                "schema": {"type": "string", "format": "binary"}
                            },
                        },
                    },
                    **_errors(settings, 400, 401, 403, 404),
                    **_busy(),
                },
            }
        },
        "/health": {
            "get": {
                "summary": "Readiness and diagnostics (no credential)",
                "responses": {
                    "200": _json("Health", "Accepting events."),
                    "503": _json("Health", "Cannot accept events."),
                },
            }
        },
        "/internal/backup": {  # svc.http.backup; docs/operations.md, Backups and restore
            "post": {
                "summary": "Take a backup (admin token; body: to, keep?, full?)",
                "security": secured,
                "responses": {
                    "201": {"description": "The backup's manifest."},
                    **_errors(settings, 400, 401, 403, 409),
                },
            },
            "get": {
                "summary": "List the backups in `to` (admin token)",
                "security": secured,
                "responses": {
                    "200": {"description": "The backups' manifests."},
                    **_errors(settings, 400, 401, 403),
                },
            },
        },
        "/internal/lake": {  # svc.http.lake; docs/operations.md, Raw-event lake
            "post": {
                "summary": "Write a finished UTC day to the raw-event lake now (admin token; "
                "body: day, project?)",
                "security": secured,
                "responses": {
                    "200": {"description": "The manifests of the day files written."},
                    **_errors(settings, 400, 401, 403, 409, 503),
                },
            },
        },
        **_projects(settings, secured),
        **dropped_paths(settings, secured, (_errors, _json, _param)),  # dropped_doc
        **mail_paths(settings, secured, _errors, _param),  # svc.http.mail
        **account_paths(settings, secured, (_errors, _json, _param, _ref)),  # accounts_doc
        **saved_paths(settings, secured, (_errors, _json, _param)),  # saved_doc
        **sso_paths(settings, (_errors, _json, _param, _ref)),  # sso_doc
        **_pages(settings),
        "/internal/metrics": {
            "get": {
                "summary": "The service's figures for Prometheus (Bearer "
                "SVC_INTERNAL_METRICS_TOKEN; 404 when that is not set); docs/operations.md",
                "responses": {
                    "200": {
                        "description": "Prometheus text exposition (OpenMetrics on request).",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(settings, 401, 404),
                },
            }
        },
    }


def openapi_document(settings: Settings | None = None) -> dict[str, Any]:
    """The document for a service run with ``settings`` (its body and batch limits)."""
    settings = settings or Settings()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "svc",
            "version": __version__,
            "description": "Cookie-free web analytics. Every error is "
            '{"ok": false, "error": {"code", "message"}}. See docs/api.md.',
        },
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "svc_live_... key or svc_admin_... token",
                },
                "queryKey": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "key",
                    "description": "Public key, browsers only",
                },
            },
        },
        "paths": _paths(settings),
    }
