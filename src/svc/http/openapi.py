"""The OpenAPI 3.1 document served at /openapi.json.

Built by hand from small pieces so it says exactly what the handlers do; a test checks that
every route of the app is documented and nothing else is.
"""

from __future__ import annotations

from typing import Any

from svc import __version__

JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "Invalid request; `error.field` names the field.",
        401: "Missing (`missing_api_key`) or invalid (`invalid_api_key`) credential.",
        403: "Valid credential used for another project or outside its scopes (`forbidden`).",
        404: "No such resource (`not_found`).",
        409: "Conflict with an existing resource (`conflict`).",
        413: "Body over 1 MiB or batch over 1,000 events (`payload_too_large`).",
        429: "Rate limit (`rate_limited`) or monthly quota (`quota_exceeded`); see Retry-After.",
        503: "Events cannot be stored right now (`unavailable`); see Retry-After.",
    }
    return {str(s): _json(_ref("Error"), text[s]) for s in statuses}


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


def _schemas() -> dict[str, Any]:
    scalar = {"type": ["string", "number", "boolean", "null"]}
    return {
        "Error": {
            "type": "object",
            "required": ["ok", "error"],
            "properties": {
                "ok": {"const": False},
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string", "examples": ["invalid_request"]},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                    },
                },
            },
        },
        "Event": {
            "type": "object",
            "required": ["event", "url"],
            "properties": {
                "event": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "examples": ["page_view"],
                },
                "url": {"type": "string", "maxLength": 2048, "description": "Full URL or path."},
                "sessionId": {
                    "type": "string",
                    "maxLength": 128,
                    "description": "Client-owned session; derived when absent.",
                },
                "projectId": {"type": "string", "description": "Must be the key's project."},
                "properties": {
                    "type": "object",
                    "maxProperties": 50,
                    "additionalProperties": scalar,
                    "description": "Custom properties; `items` may be an array of flat "
                    "objects (GA4 items).",
                },
                "referrer": {"type": "string"},
                "ts": {
                    "type": "integer",
                    "description": "Client time (ms); 7 days back to 5 minutes ahead.",
                },
                "eventId": {
                    "type": "string",
                    "maxLength": 128,
                    "description": "Idempotency id: stored once.",
                },
                "userAgent": {
                    "type": "string",
                    "description": "End user's user agent (secret key only).",
                },
                "ip": {
                    "type": "string",
                    "description": "End user's address (secret key only; never stored).",
                },
                "screen": {"type": "integer", "description": "Viewport width in pixels."},
            },
        },
        "Ack": {
            "type": "object",
            "required": ["ok", "ts"],
            "properties": {
                "ok": {"const": True},
                "ts": {"type": "integer", "description": "Server time, ms since the epoch."},
                "accepted": {"type": "integer", "description": "Batches: events stored."},
                "dropped": {
                    "type": "integer",
                    "description": "Batches: events dropped on purpose (bots, duplicates).",
                },
                "rejected": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"index": {"type": "integer"}, "error": {"type": "object"}},
                    },
                },
            },
        },
        "Metrics": {
            "type": "object",
            "required": ["pageviews", "sessions", "bounceRate", "trafficSources"],
            "properties": {
                "pageviews": {"type": "integer"},
                "sessions": {"type": "integer"},
                "bounceRate": {
                    "type": "string",
                    "pattern": "^[0-9]+\\.[0-9]%$",
                    "examples": ["42.5%"],
                },
                "trafficSources": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "examples": [{"direct": 10, "google": 4}],
                },
                "visitors": {"type": "integer"},
                "events": {"type": "integer"},
                "bounces": {"type": "integer"},
                "avgSessionDuration": {"type": "number", "description": "Seconds."},
                "viewsPerSession": {"type": "number"},
                "from": {"type": "string", "format": "date"},
                "to": {"type": "string", "format": "date"},
                "timezone": {"type": "string"},
                "projectId": {"type": "string"},
            },
        },
        "Project": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "examples": ["svc_proj_acme"]},
                "name": {"type": "string"},
                "timezone": {"type": "string"},
                "domains": {"type": "array", "items": {"type": "string"}},
                "plan": {"type": "string"},
                "options": {"type": "object"},
                "createdAt": {"type": "string", "format": "date-time"},
                "updatedAt": {"type": "string", "format": "date-time"},
            },
        },
        "ProjectInput": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,39}$"},
                "timezone": {"type": "string", "default": "UTC"},
                "domains": {"type": "array", "items": {"type": "string"}},
                "options": {
                    "type": "object",
                    "properties": {
                        "excludeAddresses": {"type": "array", "items": {"type": "string"}},
                        "excludePaths": {"type": "array", "items": {"type": "string"}},
                        "onlyOwnDomains": {"type": "boolean"},
                        "monthlyQuota": {
                            "type": ["integer", "null"],
                            "minimum": 0,
                            "description": "Admin token only: the project's own events a month "
                            "(0: unlimited; null: its plan's). See docs/limits.md.",
                        },
                    },
                },
                "plan": {
                    "type": "string",
                    "description": "Admin token only: a plan of SVC_PLANS (free, pro, business, "
                    "unlimited by default).",
                },
            },
        },
        "Key": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "kind": {"enum": ["public", "secret", "share"]},
                "scopes": {"type": "array", "items": {"enum": ["ingest", "read", "manage"]}},
                "hint": {"type": "string"},
                "createdAt": {"type": "string", "format": "date-time"},
                "lastUsedAt": {"type": ["string", "null"], "format": "date-time"},
                "revokedAt": {"type": ["string", "null"], "format": "date-time"},
                "key": {"type": "string", "description": "The clear key: only when it is made."},
            },
        },
        "Health": {
            "type": "object",
            "properties": {
                "ready": {"type": "boolean"},
                "status": {"enum": ["ok", "degraded", "down"]},
                "pipeline": {"type": "object"},
                "store": {"type": "object"},
                "metadata": {"type": "object"},
                "node": {"type": "object"},
            },
        },
    }


def _paths() -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"bearer": []}]
    return {
        "/analytics": {
            "post": {
                "summary": "Ingest one event or a batch",
                "description": 'Body: an event, an array of events, or {"events": [...]}. '
                "A 200 means the events are on disk. Browsers may send a public key as "
                "`?key=` with a text/plain body.",
                "security": [*secured, {"queryKey": []}],
                "parameters": [_param("key", "query", "A public key (browsers only).")],
                "requestBody": {
                    "required": True,
                    "content": {
                        JSON: {
                            "schema": {
                                "oneOf": [
                                    _ref("Event"),
                                    {"type": "array", "items": _ref("Event"), "maxItems": 1000},
                                    {
                                        "type": "object",
                                        "properties": {
                                            "events": {"type": "array", "items": _ref("Event")}
                                        },
                                    },
                                ]
                            }
                        },
                        "text/plain": {"schema": {"type": "string"}},
                    },
                },
                "responses": {
                    "200": _json(_ref("Ack"), "Stored (or dropped on purpose: see X-Svc-Dropped)."),
                    **_errors(400, 401, 403, 413, 429, 503),
                },
            },
            "options": {
                "summary": "CORS preflight",
                "responses": {"204": {"description": "Allowed."}},
            },
        },
        "/metrics": {
            "get": {
                "summary": "Aggregate page views, sessions, bounce rate and traffic sources",
                "security": secured,
                "parameters": [
                    *RANGE_PARAMS,
                    FILTER,
                    _param("compare", "query", "previous_period or previous_year: adds `compare`."),
                ],
                "responses": {
                    "200": _json(_ref("Metrics"), "The aggregate."),
                    **_errors(400, 401, 403, 404, 429),
                },
            },
            "options": {
                "summary": "CORS preflight",
                "responses": {"204": {"description": "Allowed."}},
            },
        },
        **_report_paths(secured),
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
                    **_errors(400, 401, 403, 404),
                },
            }
        },
        "/health": {
            "get": {
                "summary": "Readiness and diagnostics (no credential)",
                "responses": {
                    "200": _json(_ref("Health"), "Accepting events."),
                    "503": _json(_ref("Health"), "Cannot accept events."),
                },
            }
        },
        "/projects": {
            "post": {
                "summary": "Create a project and its public and secret keys (admin token)",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {JSON: {"schema": _ref("ProjectInput")}},
                },
                "responses": {
                    "201": _json(
                        _ref("Project"), "The project, with `keys` {public, secret} in clear, once."
                    ),
                    **_errors(400, 401, 403, 409),
                },
            },
            "get": {
                "summary": "List projects (admin: all; secret key: its own)",
                "security": secured,
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"projects": {"type": "array", "items": _ref("Project")}},
                        },
                        "The projects.",
                    ),
                    **_errors(401, 403),
                },
            },
        },
        "/projects/{project_id}": {
            "parameters": [PROJECT_ID],
            "get": {
                "summary": "One project with its keys and this month's usage",
                "security": secured,
                "responses": {
                    "200": _json(_ref("Project"), "The project."),
                    **_errors(401, 403, 404),
                },
            },
            "patch": {
                "summary": "Change timezone, domains, options (or plan, admin only)",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {JSON: {"schema": _ref("ProjectInput")}},
                },
                "responses": {
                    "200": _json(_ref("Project"), "The changed project."),
                    **_errors(400, 401, 403, 404),
                },
            },
            "delete": {
                "summary": "Delete a project, its keys and events (admin token)",
                "security": secured,
                "responses": {"200": {"description": "Deleted."}, **_errors(401, 403, 404)},
            },
        },
        "/projects/{project_id}/keys": {
            "parameters": [PROJECT_ID],
            "get": {
                "summary": "List keys (never clear values)",
                "security": secured,
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"keys": {"type": "array", "items": _ref("Key")}},
                        },
                        "The keys.",
                    ),
                    **_errors(401, 403, 404),
                },
            },
            "post": {
                "summary": "Create a key (public, secret or share)",
                "security": secured,
                "requestBody": {
                    "content": {
                        JSON: {
                            "schema": {
                                "type": "object",
                                "properties": {"kind": {"enum": ["public", "secret", "share"]}},
                            }
                        }
                    }
                },
                "responses": {
                    "201": _json(_ref("Key"), "The key, with `key` in clear, once."),
                    **_errors(400, 401, 403, 404),
                },
            },
        },
        "/projects/{project_id}/keys/{key_id}": {
            "parameters": [PROJECT_ID, KEY_ID],
            "delete": {
                "summary": "Revoke a key",
                "security": secured,
                "responses": {
                    "200": _json(_ref("Key"), "The revoked key."),
                    **_errors(401, 403, 404),
                },
            },
        },
        "/projects/{project_id}/keys/{key_id}/rotate": {
            "parameters": [PROJECT_ID, KEY_ID],
            "post": {
                "summary": "Replace a key: the new one is shown once, the old one is revoked",
                "security": secured,
                "responses": {
                    "201": _json(_ref("Key"), "The new key, with `key` in clear and `replaces`."),
                    **_errors(401, 403, 404, 409),
                },
            },
        },
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
        **_dashboard_paths(),
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1."}},
            }
        },
    }


FILTER = _param(
    "filter",
    "query",
    "Repeatable, all must hold: <dimension>:<op>:<value>; ops is, is_not (| separates "
    "alternatives), contains, not_contains, matches, not_matches (RE2). Dimensions: page, "
    "entry_page, exit_page, hostname, source, channel, referrer, utm_source, utm_medium, "
    "utm_campaign, utm_content, utm_term, country, region, city, browser, browser_version, os, "
    "os_version, device, event, prop:<key>.",
)
SESSION_ROW = {
    "value": {"type": "string"},
    "visitors": {"type": "integer"},
    "sessions": {"type": "integer"},
    "pageviews": {"type": "integer"},
    "events": {"type": "integer"},
    "bounceRate": {"type": "string"},
    "avgSessionDuration": {"type": "number"},
}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _list(**props: Any) -> dict[str, Any]:
    return {"type": "array", "items": _obj(**props)}


def _report_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    scoped = [*RANGE_PARAMS, FILTER]
    limit = _param("limit", "query", "Most rows (1-1000).", type="integer")

    def get(summary: str, params: list[dict[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "security": secured,
                "parameters": params,
                "responses": {"200": _json(schema, summary), **_errors(400, 401, 403, 404, 429)},
            }
        }

    return {
        "/metrics/timeseries": get(
            "Time series by hour, day, week or month, zero-filled",
            [*scoped, _param("interval", "query", "hour, day (default), week or month.")],
            _obj(
                interval={"type": "string"},
                points={"type": "array", "items": _obj(time={"type": "string"}, **SESSION_ROW)},
            ),
        ),
        "/metrics/breakdown": get(
            "Metrics per value of a dimension",
            [
                *scoped,
                _param("by", "query", "The dimension (see `filter`).", True),
                limit,
                _param(
                    "offset",
                    "query",
                    "Rows to skip (0-1,000,000).",
                    type="integer",
                    minimum=0,
                    maximum=1_000_000,
                ),
                _param(
                    "order",
                    "query",
                    "visitors, sessions, pageviews, events, bounceRate, avgSessionDuration "
                    "or value; - for descending (default -visitors).",
                ),
            ],
            _obj(by={"type": "string"}, rows=_list(**SESSION_ROW), totalRows={"type": "integer"}),
        ),
        "/metrics/realtime": get(
            "Visitors in the last 5 minutes and the pages they are on",
            [_param("projectId", "query", "Admin token only."), limit],
            _obj(
                visitors={"type": "integer"},
                pages=_list(value={"type": "string"}, visitors={"type": "integer"}),
            ),
        ),
        "/metrics/goals": get(
            "Conversions of goals: event:<name> or page:<pattern with *>",
            [*scoped, _param("goal", "query", "Repeatable.", True)],
            _obj(
                visitors={"type": "integer"},
                goals=_list(
                    goal={"type": "string"},
                    visitors={"type": "integer"},
                    events={"type": "integer"},
                    conversionRate={"type": "string"},
                ),
            ),
        ),
        "/metrics/funnel": get(
            "A funnel of 2 to 8 steps completed in order within a window",
            [
                *scoped,
                _param("step", "query", "Repeatable, 2-8, like goal.", True),
                _param("window", "query", "Seconds (default 1800).", type="integer"),
            ],
            _obj(
                windowSeconds={"type": "integer"},
                steps=_list(
                    step={"type": "string"},
                    visitors={"type": "integer"},
                    conversionRate={"type": "string"},
                    dropOff={"type": "integer"},
                    dropOffRate={"type": "string"},
                ),
            ),
        ),
        "/metrics/revenue": get(
            "Revenue of purchase events per currency, and top items",
            [*scoped, limit],
            _obj(
                currencies=_list(
                    currency={"type": "string"},
                    revenue={"type": "number"},
                    orders={"type": "integer"},
                    averageOrderValue={"type": "number"},
                ),
                topItems=_list(
                    itemId={"type": "string"},
                    currency={"type": "string"},
                    quantity={"type": "number"},
                    revenue={"type": "number"},
                ),
            ),
        ),
        "/metrics/errors": get(
            "Exception events: count, fatal share, top descriptions, pages",
            [*scoped, limit],
            _obj(
                errors={"type": "integer"},
                fatal={"type": "integer"},
                fatalShare={"type": "string"},
                top=_list(
                    description={"type": "string"},
                    count={"type": "integer"},
                    fatal={"type": "integer"},
                    visitors={"type": "integer"},
                ),
                pages=_list(value={"type": "string"}, count={"type": "integer"}),
            ),
        ),
        "/metrics/properties": get(
            "Custom property keys, or the values of one key",
            [*scoped, limit, _param("key", "query", "A property key: list its values.")],
            _obj(
                keys=_list(key={"type": "string"}, events={"type": "integer"}),
                values=_list(
                    value={"type": "string"},
                    events={"type": "integer"},
                    visitors={"type": "integer"},
                ),
            ),
        ),
    }


def _dashboard_paths() -> dict[str, Any]:
    def html(summary: str, *params: dict[str, Any]) -> dict[str, Any]:
        ok = {"description": "HTML.", "content": {"text/html": {"schema": {"type": "string"}}}}
        return {"get": {"summary": summary, "parameters": list(params), "responses": {"200": ok}}}

    return {
        "/": html("The dashboard (sign in with a secret key or the admin token)"),
        "/dashboard": html("The dashboard"),
        "/dashboard/assets/{path}": {
            "get": {
                "summary": "The dashboard's hashed, immutable assets",
                "parameters": [_param("path", "path", "Asset file.", True)],
                "responses": {"200": {"description": "A file."}, **_errors(404)},
            }
        },
        "/share/{token}": html(
            "A read-only public dashboard", _param("token", "path", "A share token.", True)
        ),
    }


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "svc",
            "version": __version__,
            "description": "Cookie-free web analytics. Every error is "
            '{"ok": false, "error": {"code", "message"}}. See docs/api.md.',
        },
        "components": {
            "schemas": _schemas(),
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
        "paths": _paths(),
    }
