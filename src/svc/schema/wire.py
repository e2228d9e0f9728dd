"""The event as a client sends it to POST /analytics: its fields, their types and limits.

:class:`RawEvent` is the one definition. From it come the fast path's decoding (its
constraints are checked by msgspec, in C), the OpenAPI document's ``Event`` (its JSON Schema:
``msgspec.json.schema_components``) and the wire-format description (:func:`wire_format`)
that the edge and the TypeScript client read (``python -m svc.schema`` writes it). The
general path (``svc.ingestion.wire.validate_event``) applies the same limits, from
:mod:`svc.schema.limits`.

Each field's ``Meta`` holds: the constraints msgspec checks (exactly those the fast path may
refuse on: anything more would send a valid body down the general path), a description,
``extra_json_schema`` for what the document says beyond them, and ``extra`` for the rules of
the wire-format description that are not constraints (``notBlank``, ``pathOrUrl``, ...).
"""

from __future__ import annotations

import textwrap
from typing import Annotated, Any

import msgspec
from msgspec import Meta, inspect

from svc.schema import measurements
from svc.schema.limits import (
    FUTURE_WINDOW_MS,
    IP_PATTERN,
    MAX_BATCH_EVENTS,
    MAX_BODY_BYTES,
    MAX_CLIENT_FIELD,
    MAX_EVENT_ID,
    MAX_EVENT_NAME,
    MAX_IP,
    MAX_ITEMS,
    MAX_ITEMS_JSON,
    MAX_NESTING_DEPTH,
    MAX_PROJECT_ID,
    MAX_PROPERTIES,
    MAX_PROPERTY_KEY,
    MAX_PROPERTY_VALUE,
    MAX_REFERRER,
    MAX_SCREEN,
    MAX_SESSION_ID,
    MAX_URL,
    MAX_USER_AGENT,
    PAST_WINDOW_MS,
)

#: The keys of ``client``: the enrichment of an event as another service recorded it, in the
#: events table's terms (``browserVersion`` is the column ``browser_version``...).
CLIENT_FIELDS = ("browser", "browserVersion", "os", "osVersion", "device", "country", "region",
                 "city")  # fmt: skip

#: A property's value: a string, a number, a boolean or null.
_SCALAR: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "maxLength": MAX_PROPERTY_VALUE},
        {"type": ["number", "boolean", "null"]},
    ]
}
#: ``properties.items``: GA4's item list, flat objects.
_ITEMS: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_ITEMS,
    "items": {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
    },
    "description": f"At most {MAX_ITEMS_JSON:,} characters once encoded as JSON.",
}


class RawEvent(
    msgspec.Struct,
    rename={
        "name": "event",
        "session_id": "sessionId",
        "project_id": "projectId",
        "ts_ms": "ts",
        "event_id": "eventId",
        "user_agent": "userAgent",
    },
):
    """An event, as a client sends it to POST /analytics."""

    # ``svc.ingestion.wire.validate_event`` builds it from a decoded object, positionally: in
    # this order. On the fast path (``decode_valid``) msgspec decodes it straight from the
    # body: the constraints check types and lengths in C, at least as strictly as
    # validate_event (which ignores unknown fields too); a ``ts`` sent as a float or
    # ``properties`` sent as null take the general path.

    name: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=MAX_EVENT_NAME,
            description="The event's name (not blank); `page_view` is a page view.",
            examples=["page_view", "signup"],
            extra={"notBlank": True},
        ),
    ]
    url: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=MAX_URL,
            description="The page: a full URL (https://...) or a path (/...).",
            examples=["https://acme.com/pricing", "/pricing"],
            extra_json_schema={"pattern": "^/|://"},
            extra={"notBlank": True, "pathOrUrl": True},
        ),
    ]
    session_id: (
        Annotated[
            str,
            Meta(
                max_length=MAX_SESSION_ID,
                description="A session named by the client; derived when absent.",
            ),
        ]
        | None
    ) = None
    project_id: (
        Annotated[
            str, Meta(max_length=MAX_PROJECT_ID, description="Must be the key's own project.")
        ]
        | None
    ) = None
    properties: Annotated[
        dict[str, Any],
        Meta(
            description="Custom properties: string keys to a string, number, boolean or null; "
            "`items` may be an array of flat objects (GA4 items).",
            extra_json_schema={
                "maxProperties": MAX_PROPERTIES,
                "propertyNames": {"minLength": 1, "maxLength": MAX_PROPERTY_KEY},
                "properties": {"items": {"anyOf": [_SCALAR, _ITEMS]}},
                "additionalProperties": _SCALAR,
            },
            extra={
                "maxKeys": MAX_PROPERTIES,
                "maxKeyLength": MAX_PROPERTY_KEY,
                "maxValueLength": MAX_PROPERTY_VALUE,
                "items": {"maxItems": MAX_ITEMS, "maxJsonLength": MAX_ITEMS_JSON},
            },
        ),
    ] = {}
    referrer: (
        Annotated[
            str,
            Meta(
                description=f"The page's referrer; cut to {MAX_REFERRER:,} characters.",
                extra={"maxLength": MAX_REFERRER, "truncate": True},
            ),
        ]
        | None
    ) = None
    ts_ms: (
        Annotated[
            int,
            Meta(
                description="Client time, ms since the epoch, for events sent late: from 7 days "
                "before to 5 minutes after the server's clock.",
                extra={
                    "type": "number",
                    "pastWindowMs": PAST_WINDOW_MS,
                    "futureWindowMs": FUTURE_WINDOW_MS,
                },
            ),
        ]
        | None
    ) = None
    event_id: (
        Annotated[
            str,
            Meta(
                max_length=MAX_EVENT_ID,
                description="An id of the client's: an event sent twice with it is stored once.",
            ),
        ]
        | None
    ) = None
    user_agent: (
        Annotated[
            str,
            Meta(
                max_length=MAX_USER_AGENT,
                description="The end user's user agent (secret key only).",
            ),
        ]
        | None
    ) = None
    ip: (
        Annotated[
            str,
            Meta(
                max_length=MAX_IP,
                description="The end user's address (secret key only; never stored).",
                extra_json_schema={"pattern": IP_PATTERN},
                extra={"pattern": IP_PATTERN},
            ),
        ]
        | None
    ) = None
    screen: (
        Annotated[int, Meta(ge=0, le=MAX_SCREEN, description="The viewport's width in pixels.")]
        | None
    ) = None
    client: (
        Annotated[
            dict[str, str],
            Meta(
                description="What another service recorded of the end user's client (secret "
                "key only; imports): any of "
                + ", ".join(f"`{k}`" for k in CLIENT_FIELDS)
                + f" (each at most {MAX_CLIENT_FIELD} characters). Each one given replaces "
                "what the user agent and the address would give.",
                extra_json_schema={
                    "propertyNames": {"enum": list(CLIENT_FIELDS)},
                    "additionalProperties": {"type": "string", "maxLength": MAX_CLIENT_FIELD},
                },
                extra={"keys": list(CLIENT_FIELDS)},
            ),
        ]
        | None
    ) = None


# the wire-format description -------------------------------------------------------------

_COMMENT = (
    "The wire format of POST /analytics as data: the limits and rules that the origin "
    "(src/svc/ingestion/wire.py), the edge (edge/src/wire.ts) and the TypeScript client "
    "(clients/js/src/validate.ts) apply. Generated from src/svc/schema by "
    "`python -m svc.schema`: do not edit. tests/test_schema.py checks that the committed "
    "files are the generated ones and that the clients agree with them; "
    "tests/edge/test_wire_agreement.py that the edge answers a corpus of bodies exactly as "
    "the origin does."
)


def _field(t: inspect.Type) -> dict[str, Any]:
    """A field's rules: its type and constraints, then its ``extra`` rules."""
    if isinstance(t, inspect.UnionType):  # X | None: null is the field absent
        (t,) = (u for u in t.types if not isinstance(u, inspect.NoneType))
    extra: dict[str, Any] = {}
    if isinstance(t, inspect.Metadata):
        extra = dict(t.extra or {})
        t = t.type
    out: dict[str, Any] = {}
    if isinstance(t, inspect.StrType):
        out["type"] = "string"
        if t.min_length is not None:
            out["minLength"] = t.min_length
        if t.max_length is not None:
            out["maxLength"] = t.max_length
    elif isinstance(t, inspect.IntType):
        out["type"] = "integer"
        if t.ge is not None:
            out["minimum"] = t.ge
        if t.le is not None:
            out["maximum"] = t.le
    elif isinstance(t, inspect.DictType):
        out["type"] = "object"
    else:  # pragma: no cover - a new kind of field needs its description here
        raise TypeError(f"no wire-format description for {t!r}")
    out.update(extra)
    return out


def wire_format() -> dict[str, Any]:
    """The wire format of POST /analytics as data (``edge/src/wire-format.json``)."""
    info = inspect.type_info(RawEvent)
    assert isinstance(info, inspect.StructType)
    event: dict[str, Any] = {}
    for f in info.fields:
        rules = _field(f.type)
        if f.required:
            rules = {"type": rules.pop("type"), "required": True, **rules}
        event[f.encode_name] = rules
    return {
        "$comment": _COMMENT,
        "version": 1,
        "body": {
            "maxBytes": MAX_BODY_BYTES,
            "maxBatchEvents": MAX_BATCH_EVENTS,
            "shapes": ["event", "array of events", '{"events": [...]}'],
            "maxNestingDepth": MAX_NESTING_DEPTH,
        },
        "event": event,
        "kinds": measurements.describe(),
        "lengths": "characters are Unicode code points",
    }


def limits_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a wire-format description, at the same paths (what the TypeScript client
    needs of it: its rules are its own)."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            if inner := limits_of(value):
                out[key] = inner
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    return out


def render(form: str) -> str:
    """The text of a generated file: ``json``, the description; ``ts``, a module of the
    TypeScript client with its numbers (:func:`limits_of`), which the client's build compiles
    in."""
    doc = wire_format()
    if form == "json":
        return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n"
    comment = (
        "The limits of POST /analytics' wire format: the numbers of edge/src/wire-format.json, "
        "at the same paths. Generated from src/svc/schema by `python -m svc.schema`: do not "
        "edit. tests/test_schema.py checks that this file is the generated one and that the "
        "client's LIMITS (validate.ts) are these."
    )
    body = msgspec.json.format(msgspec.json.encode(limits_of(doc)), indent=2).decode()
    lines = ["// " + line for line in textwrap.wrap(comment, 97)]
    return (
        "\n".join(lines)
        + "\n\n/** @internal The limits of the service's wire format. */\n"
        + f"export const WIRE_LIMITS = {body} as const;\n"
    )
