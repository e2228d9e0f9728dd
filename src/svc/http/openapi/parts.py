"""The parts the path tables are built of: a reference to a schema, a JSON answer, a
parameter, the range parameters, the CORS preflight, the error answers."""

from __future__ import annotations

from typing import Any

from svc.http.openapi.base import JSON
from svc.http.openapi.schemas import TYPES
from svc.settings import Settings


def _ref(name: str) -> dict[str, str]:
    assert name in TYPES, name
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": _ref(name)}}}


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
