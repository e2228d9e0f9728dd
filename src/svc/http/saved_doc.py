"""The "saved" part of the OpenAPI document (:mod:`svc.http.openapi`): the types of the
answers of :mod:`svc.http.saved` (a project's saved goals, funnels, segments and
annotations) and their paths, with the limits :mod:`svc.saved` enforces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType

from svc.queries.filters import MAX_FILTERS
from svc.saved import annotations as notes
from svc.saved import funnels, goals
from svc.saved.common import MAX_NAME, MAX_PER_PROJECT
from svc.schema.limits import MAX_EVENT_NAME

Time = Annotated[str, Meta(description="ISO 8601, UTC.")]
Name = Annotated[str, Meta(min_length=1, max_length=MAX_NAME)]


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p.title() for p in rest)


class _Doc(Struct, rename=_camel, kw_only=True):
    """camelCase names, absent optional fields."""


class GoalProperty(_Doc):
    key: str
    value: str


class SavedGoal(_Doc):
    id: str
    name: Name
    kind: Annotated[str, Meta(description="event or page.")]
    goal: Annotated[str, Meta(description="As GET /metrics/goals takes `goal`.")]
    created_at: Time
    updated_at: Time
    event: Annotated[str, Meta(description="kind event: the event's name.")] | UnsetType = UNSET
    page: Annotated[str, Meta(description="kind page: a path, * any text.")] | UnsetType = UNSET
    property: GoalProperty | UnsetType = UNSET


class SavedGoals(_Doc):
    goals: list[SavedGoal]


class SavedFunnel(_Doc):
    id: str
    name: Name
    steps: Annotated[list[str], Meta(min_length=2, max_length=8)]
    created_at: Time
    updated_at: Time
    window: Annotated[int, Meta(description="Seconds; absent: 1800.")] | UnsetType = UNSET


class SavedFunnels(_Doc):
    funnels: list[SavedFunnel]


class Segment(_Doc):
    id: str
    name: Name
    filters: Annotated[list[str], Meta(min_length=1, max_length=MAX_FILTERS)]
    shared: Annotated[bool, Meta(description="false: its owner's alone.")]
    owner_id: Annotated[str | None, Meta(description="The account that made it; null: a key.")]
    created_at: Time
    updated_at: Time


class Segments(_Doc):
    segments: list[Segment]


class Annotation(_Doc):
    id: str
    date: Annotated[str, Meta(description="YYYY-MM-DD, or a moment (UTC) as written.")]
    day: Annotated[str, Meta(description="Its day in the project's time zone.")]
    text: Annotated[str, Meta(min_length=1, max_length=notes.MAX_TEXT)]
    created_by: Annotated[str, Meta(description="An account id, a key id, or `admin`.")]
    created_at: Time
    updated_at: Time


class Annotations(_Doc):
    timezone: str
    annotations: list[Annotation]


SAVED_TYPES: dict[str, type[Struct]] = {
    t.__name__: t
    for t in (
        SavedGoal,
        SavedGoals,
        SavedFunnel,
        SavedFunnels,
        Segment,
        Segments,
        Annotation,
        Annotations,
    )
}

_NAME = {"type": "string", "minLength": 1, "maxLength": MAX_NAME}
_BODIES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "goals": (
        {
            "name": _NAME,
            "kind": {"type": "string", "enum": list(goals.KINDS)},
            "event": {"type": "string", "minLength": 1, "maxLength": MAX_EVENT_NAME},
            "page": {"type": "string", "minLength": 1, "maxLength": goals.MAX_PAGE},
            "property": {
                "type": ["object", "null"],
                "required": ["key", "value"],
                "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        ["name", "kind"],
    ),
    "funnels": (
        {
            "name": _NAME,
            "steps": {
                "type": "array",
                "items": {"type": "string", "maxLength": funnels.MAX_STEP},
                "minItems": funnels.MIN_STEPS,
                "maxItems": funnels.MAX_STEPS,
            },
            "window": {"type": ["integer", "null"], "minimum": 1, "maximum": funnels.MAX_WINDOW},
        },
        ["name", "steps"],
    ),
    "segments": (
        {
            "name": _NAME,
            "filters": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_FILTERS,
            },
            "shared": {"type": "boolean"},
        },
        ["name", "filters"],
    ),
    "annotations": (
        {
            "date": {"type": "string", "description": "YYYY-MM-DD or an ISO 8601 timestamp."},
            "text": {"type": "string", "minLength": 1, "maxLength": notes.MAX_TEXT},
        },
        ["date", "text"],
    ),
}

_WHO = {
    "goals": ("read (a share link too)", "edit (a secret key too)"),
    "funnels": ("read (a share link too)", "edit (a secret key too)"),
    "segments": (
        "read: the shared ones and one's own personal ones (a share link: the shared ones)",
        "a personal one (an account's): read; a shared one: edit",
    ),
    "annotations": ("read (a share link too)", "edit (a secret key too)"),
}
_TYPES = {
    "goals": ("SavedGoals", "SavedGoal", "goal_id", "goal"),
    "funnels": ("SavedFunnels", "SavedFunnel", "funnel_id", "funnel"),
    "segments": ("Segments", "Segment", "segment_id", "segment"),
    "annotations": ("Annotations", "Annotation", "annotation_id", "annotation"),
}


def saved_paths(
    settings: Any,
    secured: list[dict[str, list[str]]],
    helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
) -> dict[str, Any]:
    """The paths of :mod:`svc.http.saved`; ``helpers`` are :mod:`svc.http.openapi`'s
    ``_errors``, ``_json`` and ``_param``."""
    _errors, _json, _param = helpers
    project = _param("project_id", "path", "Project id, `svc_proj_<name>`.", True)
    out: dict[str, Any] = {}
    for plural, (many, one, id_name, singular) in _TYPES.items():
        props, required = _BODIES[plural]
        reading, writing = _WHO[plural]

        def body(needed: list[str], props: dict[str, Any] = props) -> dict[str, Any]:
            schema: dict[str, Any] = {
                "type": "object",
                "properties": props,
                "additionalProperties": False,
            }
            if needed:
                schema["required"] = needed
            return {"required": True, "content": {"application/json": {"schema": schema}}}

        listing: dict[str, Any] = {
            "summary": f"The project's saved {plural} ({reading})",
            "security": secured,
            "responses": {"200": _json(many, f"`{plural}`."), **_errors(settings, 401, 403, 404)},
        }
        if plural == "annotations":
            listing["parameters"] = [
                _param(
                    "from", "query", "First local day, YYYY-MM-DD.", type="string", format="date"
                ),
                _param("to", "query", "Last local day, YYYY-MM-DD.", type="string", format="date"),
            ]
            listing["responses"] = {**listing["responses"], **_errors(settings, 400)}
        item = _param(id_name, "path", f"The {singular}'s id.", True)
        out[f"/projects/{{project_id}}/{plural}"] = {
            "parameters": [project],
            "get": listing,
            "post": {
                "summary": f"Save a {singular} ({writing}; at most {MAX_PER_PROJECT} a project)",
                "security": secured,
                "requestBody": body(required),
                "responses": {
                    "201": _json(one, f"The new {singular}."),
                    **_errors(settings, 400, 401, 403, 404, 409),
                },
            },
        }
        out[f"/projects/{{project_id}}/{plural}/{{{id_name}}}"] = {
            "parameters": [project, item],
            "patch": {
                "summary": f"Change some fields of a {singular} ({writing})",
                "security": secured,
                "requestBody": body([]),
                "responses": {
                    "200": _json(one, f"The {singular}."),
                    **_errors(settings, 400, 401, 403, 404),
                },
            },
            "delete": {
                "summary": f"Delete a {singular} ({writing})",
                "security": secured,
                "responses": {
                    "200": _json(one, f"The deleted {singular}."),
                    **_errors(settings, 401, 403, 404),
                },
            },
        }
    return out
