"""The path of ingestion: POST /analytics."""

from __future__ import annotations

from typing import Any

from svc.http.openapi.base import JSON
from svc.http.openapi.parts import PREFLIGHT, _errors, _json, _param, _ref
from svc.settings import Settings


def analytics_path(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
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
