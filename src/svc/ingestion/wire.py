"""The wire format of POST /analytics: decoding a body and validating each event.

A body is one event object, a JSON array of events, or ``{"events": [...]}``. Each event is
validated on its own so that a batch keeps its valid events; every error names its field.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import msgspec

from svc.errors import InvalidRequest, PayloadTooLarge
from svc.schema.limits import (
    FUTURE_WINDOW_MS,
    IP_PATTERN,
    MAX_CLIENT_FIELD,
    MAX_EVENT_ID,
    MAX_EVENT_NAME,
    MAX_IP,
    MAX_ITEMS,
    MAX_ITEMS_JSON,
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
from svc.schema.measurements import KINDS, Kind
from svc.schema.wire import CLIENT_FIELDS, RawEvent

__all__ = [
    "Body",
    "RawEvent",
    "Undecodable",
    "check_kind",
    "decode_body",
    "decode_valid",
    "validate_event",
]

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_IP = re.compile(IP_PATTERN)


@dataclass(slots=True)
class Body:
    events: list[Any]
    is_batch: bool


def decode_body(data: bytes, max_events: int) -> Body:
    """Parse JSON and find the events; malformed JSON or a wrong shape is a 400.

    Well-formed JSON that the decoder still refuses (invalid UTF-8 inside a string, a number
    out of range such as ``1e400``) is decoded event by event (:func:`_decode_events`): the
    events that decode are kept, each that does not stands as an :class:`Undecodable` whose
    error names its field, so that a batch keeps its good events."""
    if not data.strip():
        raise InvalidRequest("the request body is empty; send a JSON event", field="body")
    try:
        doc = _decoder.decode(data)
    except (msgspec.ValidationError, UnicodeDecodeError) as exc:
        doc = _decode_events(data, exc)
    except msgspec.DecodeError as exc:
        if _bad_utf8(exc):
            doc = _decode_events(data, exc)
        else:
            doc = _decode_with_lone_surrogates(data, exc)
    except RecursionError as exc:  # msgspec's nesting bound (docs/limits.md): 400, not 500
        raise InvalidRequest("the body is nested too deeply", field="body") from exc
    if isinstance(doc, list):
        events, is_batch = doc, True
    elif type(doc) is Undecodable:  # a single event that does not decode
        raise doc.error
    elif isinstance(doc, dict) and "events" in doc and "event" not in doc:
        events, is_batch = doc["events"], True
        if not isinstance(events, list):
            raise InvalidRequest("`events` must be an array of events", field="events")
    elif isinstance(doc, dict):
        events, is_batch = [doc], False
    else:
        raise InvalidRequest(
            'the body must be an event object, an array of events or {"events": [...]}',
            field="body",
        )
    if is_batch and not events:
        raise InvalidRequest("the batch has no events", field="events")
    if len(events) > max_events:
        raise PayloadTooLarge(
            f"a batch holds at most {max_events} events; this one has {len(events)}",
            field="events",
        )
    return Body(events, is_batch)


class Undecodable:
    """An event of a well-formed body that does not decode (invalid UTF-8 in a string, a
    number out of range): it stands in the event list, and :func:`validate_event` raises its
    error, which names the field."""

    __slots__ = ("error",)

    def __init__(self, error: InvalidRequest) -> None:
        self.error = error


_raw_list = msgspec.json.Decoder(list[msgspec.Raw])
_raw_object = msgspec.json.Decoder(dict[str, msgspec.Raw])
# what an untyped decode raises on well-formed JSON it cannot represent
_UNDECODABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def _bad_utf8(exc: Exception) -> bool:
    """Whether ``exc`` says a string holds invalid UTF-8: a UnicodeDecodeError up to msgspec
    0.22, a DecodeError that says so from 0.23."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    return isinstance(exc, msgspec.DecodeError) and "invalid utf-8" in str(exc).lower()


def _decode_events(data: bytes, exc: Exception) -> Any:
    """A body that is well-formed JSON but does not decode whole: its events decoded one by
    one (an array, ``{"events": [...]}`` or one event), each that fails as an
    :class:`Undecodable`. JSON that is not well-formed is a 400 for the whole body."""
    start = data.lstrip()[:1]
    try:
        if start == b"[":
            return [_decode_event(raw) for raw in _raw_list.decode(data)]
        if start == b"{":
            fields = _raw_object.decode(data)
            if "events" in fields and "event" not in fields:
                try:
                    events = _raw_list.decode(fields["events"])
                except msgspec.ValidationError:
                    return {"events": None}  # refused by decode_body: not an array
                return {"events": [_decode_event(raw) for raw in events]}
            return _decode_event(msgspec.Raw(data))
    except UnicodeDecodeError as error:  # in a field name at the top level
        raise InvalidRequest("the body holds invalid UTF-8 in a field name", field="body") from (
            error
        )
    except (msgspec.DecodeError, RecursionError) as malformed:
        if _bad_utf8(malformed):  # (msgspec 0.23 and later) in a field name at the top level
            raise InvalidRequest(
                "the body holds invalid UTF-8 in a field name", field="body"
            ) from malformed
        exc = malformed
    if _bad_utf8(exc):
        raise InvalidRequest("the body holds invalid UTF-8", field="body") from exc
    raise InvalidRequest(f"the body is not valid JSON: {exc}", field="body") from exc


def _decode_with_lone_surrogates(data: bytes, exc: msgspec.DecodeError) -> Any:
    """JSON's grammar allows an escaped lone UTF-16 surrogate (``"\\ud800"``), which msgspec
    refuses as malformed, and no text can hold. Such a body is read by the standard library
    (only on this error path), and each event holding one stands as an :class:`Undecodable`
    naming the field; any other malformed JSON stays a 400 for the whole body."""
    if b"\\u" not in data:
        raise InvalidRequest(f"the body is not valid JSON: {exc}", field="body") from exc
    try:
        doc = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise InvalidRequest(f"the body is not valid JSON: {exc}", field="body") from error
    if isinstance(doc, dict) and isinstance(doc.get("events"), list) and "event" not in doc:
        return {**doc, "events": [_without_surrogates(e) for e in doc["events"]]}
    if isinstance(doc, list):
        return [_without_surrogates(e) for e in doc]
    return _without_surrogates(doc)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _without_surrogates(event: Any) -> Any:
    """``event``, or an :class:`Undecodable` naming the first field that holds a lone
    surrogate (``properties.<key>`` inside the properties; ``event`` for a field name)."""
    where = _surrogate_at(event, "")
    if where is None:
        return event
    field = where.split(".", 2)
    name = ".".join(field[:2]) if field[0] == "properties" else field[0]
    return Undecodable(
        InvalidRequest(
            f"`{name}` holds an unpaired UTF-16 surrogate, which no text can hold",
            field=name or "event",
        )
    )


def _surrogate_at(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if _has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _has_surrogate(key):
                return "event"
            found = _surrogate_at(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    if isinstance(value, list):
        for item in value:
            found = _surrogate_at(item, path)
            if found is not None:
                return found
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _decode_event(raw: msgspec.Raw) -> Any:
    try:
        return _decoder.decode(raw)
    except _UNDECODABLE as exc:
        return Undecodable(_event_error(raw, exc))


def _event_error(raw: msgspec.Raw, exc: Exception) -> InvalidRequest:
    """The error of an event that does not decode, naming the field (``properties.<key>``
    inside the properties) whose value does not."""
    where = "event"
    try:
        fields = _raw_object.decode(raw)
        for key, value in fields.items():
            try:
                _decoder.decode(value)
            except _UNDECODABLE as inner:
                where, exc = key, inner
                if key == "properties":
                    for name, item in _raw_object.decode(value).items():
                        try:
                            _decoder.decode(item)
                        except _UNDECODABLE as deepest:
                            where, exc = f"properties.{name}", deepest
                            break
                break
    except _UNDECODABLE:
        pass  # not an object, or a field name that does not decode: the event is named
    if _bad_utf8(exc):
        what = "holds invalid UTF-8"
    elif isinstance(exc, RecursionError):
        what = "is nested too deeply"
    elif isinstance(exc, msgspec.ValidationError):
        what = f"cannot be read: {str(exc).split(' - at ')[0].lower()}"
    else:
        what = "is not valid JSON"
    if where == "event":
        return InvalidRequest(f"the event {what}", field="event")
    return InvalidRequest(f"`{where}` {what}", field=where)


_batch_decoder = msgspec.json.Decoder(list[RawEvent])
_event_decoder = msgspec.json.Decoder(RawEvent)


def decode_valid(data: bytes, max_events: int, now_ms: int) -> Body | None:
    """The fast path of :func:`decode_body` + :func:`validate_event` for a body whose every
    event is valid (nearly all of them): its events, already :class:`RawEvent`. None for any
    other body (an invalid event, another shape, a limit reached), which then takes the
    general path: so answers and errors are always the general path's."""
    start = data[:64].lstrip()[:1]
    try:
        if start == b"[":
            wire = _batch_decoder.decode(data)
            if not wire or len(wire) > max_events:
                return None
            is_batch = True
        elif start == b"{":
            wire = [_event_decoder.decode(data)]  # {"events": [...]} lacks `event`: general
            is_batch = False
        else:
            return None
        low, high = now_ms - PAST_WINDOW_MS, now_ms + FUTURE_WINDOW_MS
        for w in wire:  # what msgspec does not check, and "" as absent (as the general path)
            url = w.url
            if w.name.isspace() or url.isspace() or not (url.startswith("/") or "://" in url):
                return None
            ts = w.ts_ms
            if ts is not None and not low <= ts <= high:
                return None
            ip = w.ip
            if ip is not None:
                if not ip:
                    w.ip = None
                elif not _IP.match(ip):
                    return None
            referrer = w.referrer
            if referrer is not None:
                if not referrer:
                    w.referrer = None
                elif len(referrer) > MAX_REFERRER:
                    w.referrer = referrer[:MAX_REFERRER]
            if w.session_id == "":
                w.session_id = None
            if w.project_id == "":
                w.project_id = None
            if w.event_id == "":
                w.event_id = None
            if w.user_agent == "":
                w.user_agent = None
            kind = KINDS.get(w.name)
            if kind is not None:
                check_kind(kind, w.properties)
            if w.properties:
                w.properties = _properties(w.properties)
            if w.client is not None:
                w.client = _client(w.client)
    except (msgspec.DecodeError, InvalidRequest, RecursionError, ValueError, OverflowError):
        return None
    return Body(wire, is_batch)


def validate_event(obj: Any, now_ms: int) -> RawEvent:
    """A :class:`RawEvent`, or :class:`InvalidRequest` naming the first bad field.

    On the hot path: each optional field costs one lookup when it is absent or a plain short
    string; anything else goes through :func:`_opt_str`, which decides as it always did.
    """
    if not isinstance(obj, dict):
        if type(obj) is Undecodable:
            raise obj.error
        raise InvalidRequest("an event must be a JSON object", field="event")
    get = obj.get
    name = get("event")
    if not isinstance(name, str) or not name or name.isspace():
        raise InvalidRequest("`event` is required: a non-empty string", field="event")
    if len(name) > MAX_EVENT_NAME:
        raise InvalidRequest(f"`event` is longer than {MAX_EVENT_NAME} characters", field="event")
    url = get("url")
    if not isinstance(url, str) or not url or url.isspace():
        raise InvalidRequest("`url` is required: a full URL or a path", field="url")
    if len(url) > MAX_URL:
        raise InvalidRequest(f"`url` is longer than {MAX_URL} characters", field="url")
    if not (url.startswith("/") or "://" in url):
        raise InvalidRequest("`url` must be a full URL (https://...) or a path (/...)", field="url")
    session_id = get("sessionId")
    if session_id is not None and not (
        type(session_id) is str and session_id and len(session_id) <= MAX_SESSION_ID
    ):
        session_id = _opt_str(obj, "sessionId", MAX_SESSION_ID)
    project_id = get("projectId")
    if project_id is not None and not (
        type(project_id) is str and project_id and len(project_id) <= MAX_PROJECT_ID
    ):
        project_id = _opt_str(obj, "projectId", MAX_PROJECT_ID)
    referrer = get("referrer")
    if referrer is not None and not (
        type(referrer) is str and referrer and len(referrer) <= MAX_REFERRER
    ):
        referrer = _opt_str(obj, "referrer", MAX_REFERRER, truncate=True)
    event_id = get("eventId")
    if event_id is not None and not (
        type(event_id) is str and event_id and len(event_id) <= MAX_EVENT_ID
    ):
        event_id = _opt_str(obj, "eventId", MAX_EVENT_ID)
    user_agent = get("userAgent")
    if user_agent is not None and not (
        type(user_agent) is str and user_agent and len(user_agent) <= MAX_USER_AGENT
    ):
        user_agent = _opt_str(obj, "userAgent", MAX_USER_AGENT)
    ip = get("ip")
    if ip is not None:
        ip = _opt_str(obj, "ip", MAX_IP)
        if ip is not None and not _IP.match(ip):
            raise InvalidRequest("`ip` must be an IPv4 or IPv6 address", field="ip")
    ts = get("ts")
    ts_ms: int | None = None
    if ts is not None:
        if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
            raise InvalidRequest(
                "`ts` must be an integer: milliseconds since the epoch", field="ts"
            )
        ts_ms = int(ts)
        if ts_ms < now_ms - PAST_WINDOW_MS:
            raise InvalidRequest("`ts` is more than 7 days in the past", field="ts")
        if ts_ms > now_ms + FUTURE_WINDOW_MS:
            raise InvalidRequest("`ts` is more than 5 minutes in the future", field="ts")
    screen = get("screen")
    if screen is not None and (
        isinstance(screen, bool) or not isinstance(screen, int) or not 0 <= screen <= MAX_SCREEN
    ):
        raise InvalidRequest(f"`screen` must be a width in pixels (0-{MAX_SCREEN})", field="screen")
    props = get("properties")
    properties = {} if props is None else _properties(props)
    kind = KINDS.get(name)
    if kind is not None:
        check_kind(kind, props or {})
    client = get("client")
    if client is not None:
        client = _client(client)
    # Positional, in RawEvent's field order.
    return RawEvent(
        name,
        url,
        session_id,
        project_id,
        properties,
        referrer,
        ts_ms,
        event_id,
        user_agent,
        ip,
        screen,
        client,
    )


def check_kind(kind: Kind, props: dict[str, Any]) -> None:
    """The properties of an event of one of the extensions' kinds (svc.schema.measurements),
    as sent (before they are stored as strings): each described one of its type and within
    its bounds, the required ones present, no other in a closed kind. Else
    :class:`InvalidRequest` naming ``properties.<key>``."""
    described = kind.properties
    for key, rule in described.items():
        where = f"properties.{key}"
        value = props.get(key)
        if value is None:
            if rule.required:
                raise InvalidRequest(f"`{where}` is required", field=where)
            continue
        if rule.type == "url":
            if not isinstance(value, str) or not _HTTP_URL.match(value):
                raise InvalidRequest(f"`{where}` must be an http(s) URL", field=where)
            if len(value) > MAX_URL:
                raise InvalidRequest(f"`{where}` is longer than {MAX_URL} characters", field=where)
            continue
        number = type(value) is int or (rule.type == "number" and type(value) is float)
        if not number or not rule.minimum <= value <= rule.maximum:
            what = "an integer" if rule.type == "integer" else "a number"
            raise InvalidRequest(
                f"`{where}` must be {what} from {rule.minimum} to {rule.maximum:,}", field=where
            )
    if kind.closed:
        for key in props:
            if key not in described:
                where = f"properties.{key}"
                names = ", ".join(described)
                raise InvalidRequest(
                    f"`{where}` is not a property of this event (it takes {names})", field=where
                )


_HTTP_URL = re.compile(r"^https?://[^\s/?#]+", re.IGNORECASE)


def _opt_str(obj: dict[str, Any], key: str, limit: int, *, truncate: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"`{key}` must be a string", field=key)
    if len(value) > limit:
        if truncate:
            return value[:limit]
        raise InvalidRequest(f"`{key}` is longer than {limit} characters", field=key)
    return value or None


def _properties(value: Any) -> dict[str, str]:
    """String keys to scalars, stored as strings (non-strings as their JSON text).

    The one exception is ``items`` (GA4's item list): an array of flat objects, stored as JSON.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest("`properties` must be an object", field="properties")
    if len(value) > MAX_PROPERTIES:
        raise InvalidRequest(
            f"`properties` has {len(value)} keys; at most {MAX_PROPERTIES} are allowed",
            field="properties",
        )
    out: dict[str, str] = {}
    for key, item in value.items():
        if not key or len(key) > MAX_PROPERTY_KEY:
            raise InvalidRequest(
                f"property names are 1-{MAX_PROPERTY_KEY} characters", field="properties"
            )
        kind = type(item)  # decoded JSON: exactly str, int, bool, float, None, list or dict
        if kind is str:
            if len(item) > MAX_PROPERTY_VALUE:
                where = f"properties.{key}"
                raise InvalidRequest(
                    f"`{where}` is longer than {MAX_PROPERTY_VALUE} characters", field=where
                )
            out[key] = item
        elif kind is int:
            out[key] = str(item)  # its JSON text
        elif kind is bool:
            out[key] = "true" if item else "false"
        elif item is None:
            out[key] = "null"
        elif kind is float:
            if not math.isfinite(item):
                where = f"properties.{key}"
                raise InvalidRequest(f"`{where}` must be a finite number", field=where)
            out[key] = _encoder.encode(item).decode()
        elif key == "items" and kind is list:
            out[key] = _items(item, f"properties.{key}")
        else:
            where = f"properties.{key}"
            raise InvalidRequest(
                f"`{where}` must be a string, number, boolean or null", field=where
            )
    return out


def _client(value: Any) -> dict[str, str] | None:
    """``client``: an object of :data:`CLIENT_FIELDS` to strings of at most
    ``MAX_CLIENT_FIELD`` characters (empty ones left out; nothing left is no ``client``)."""
    if not isinstance(value, dict):
        raise InvalidRequest("`client` must be an object", field="client")
    out: dict[str, str] = {}
    for key, item in value.items():
        where = f"client.{key}"
        if key not in CLIENT_FIELDS:
            raise InvalidRequest(
                f"`{where}` is not known; `client` takes {', '.join(CLIENT_FIELDS)}", field=where
            )
        if item is None or item == "":
            continue
        if not isinstance(item, str):
            raise InvalidRequest(f"`{where}` must be a string", field=where)
        if len(item) > MAX_CLIENT_FIELD:
            raise InvalidRequest(
                f"`{where}` is longer than {MAX_CLIENT_FIELD} characters", field=where
            )
        out[key] = item
    return out or None


def _items(items: list[Any], where: str) -> str:
    if len(items) > MAX_ITEMS:
        raise InvalidRequest(f"`{where}` holds at most {MAX_ITEMS} items", field=where)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidRequest(f"`{where}[{i}]` must be an object", field=where)
        for k, v in item.items():
            if not (v is None or isinstance(v, str | bool | int | float)):
                raise InvalidRequest(
                    f"`{where}[{i}].{k}` must be a string, number, boolean or null", field=where
                )
    text = _encoder.encode(items).decode()
    if len(text) > MAX_ITEMS_JSON:
        raise InvalidRequest(f"`{where}` is too large", field=where)
    return text
