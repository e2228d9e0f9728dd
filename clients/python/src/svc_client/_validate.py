"""Argument checks, the same rules as the TypeScript client's ``validate.ts``.

Every failure raises at the call site with a message naming the call and the argument: a
``TypeError`` for a value of the wrong type, a ``ValueError`` for a value of the right type that
breaks a rule (empty, too long, negative, not finite, too many keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Final, NoReturn

from svc_client._json import Json, JsonObject, dumps, u16len

NAME_LENGTH: Final = 200
URL_LENGTH: Final = 2048
SESSION_ID_LENGTH: Final = 128
EVENT_ID_LENGTH: Final = 128
PROJECT_ID_LENGTH: Final = 64
USER_AGENT_LENGTH: Final = 1024
PROPERTY_KEYS: Final = 50
PROPERTY_KEY_LENGTH: Final = 200
PROPERTY_VALUE_LENGTH: Final = 2048
ITEMS: Final = 200
#: The service refuses an ``items`` list longer than this once encoded.
ITEMS_JSON_LENGTH: Final = 32_768
DESCRIPTION_LENGTH: Final = 1000
STACK_LENGTH: Final = 2048

_IP: Final = re.compile(r"[0-9A-Fa-f:.]{2,45}")
_CURRENCY: Final = re.compile(r"[A-Za-z]{3}")


def type_error(where: str, message: str) -> NoReturn:
    raise TypeError(f"svc: {where}: {message}")


def value_error(where: str, message: str) -> NoReturn:
    raise ValueError(f"svc: {where}: {message}")


def describe(v: object) -> str:
    """A short description of a value for error messages."""
    if v is None or isinstance(v, bool | int | float | Decimal):
        return repr(v)
    if isinstance(v, str):
        return f"a string of {len(v)} characters" if len(v) > 40 else repr(v)
    if isinstance(v, list | tuple):
        return f"a {type(v).__name__}"
    if isinstance(v, dict):
        return "a dict"
    name = type(v).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def check_string(where: str, what: str, v: object, limit: int | None = None) -> str:
    """A string of 1..limit characters (UTF-16 code units, as in JavaScript)."""
    if not isinstance(v, str):
        type_error(where, f"{what} must be a non-empty string, got {describe(v)}")
    if not v:
        value_error(where, f"{what} must be a non-empty string, got ''")
    if limit is not None and (n := u16len(v)) > limit:
        value_error(where, f"{what} must be at most {limit} characters, got {n}")
    return v if type(v) is str else str.__str__(v)


def check_name(where: str, name: object) -> str:
    n = check_string(where, "event name", name, NAME_LENGTH)
    if not n.strip():
        value_error(where, "event name must not be blank")
    return n


def check_url(where: str, v: object) -> str:
    """A full URL (``https://...``) or a path (``/...``), as the service accepts."""
    u = check_string(where, "url", v, URL_LENGTH)
    if not (u.startswith("/") or "://" in u):
        value_error(where, f"url must be a full URL (https://...) or a path (/...), got {u!r}")
    return u


def check_ip(where: str, v: object) -> str:
    ip = check_string(where, "ip", v)
    if not _IP.fullmatch(ip):
        value_error(where, f"ip must be an IPv4 or IPv6 address, got {describe(ip)}")
    return ip


def check_number(
    where: str, what: str, v: object, *, min0: bool = False, integer: bool = False
) -> int | float:
    """A finite number (``int``, ``float`` or ``Decimal``; never ``bool``)."""
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
        type_error(where, f"{what} must be a finite number, got {describe(v)}")
    # Subclasses (IntEnum, numpy-like wrappers) become plain numbers; Decimal becomes a float.
    num: int | float = (
        v if type(v) is int or type(v) is float else (int(v) if isinstance(v, int) else float(v))
    )
    if isinstance(num, float) and not math.isfinite(num):
        value_error(where, f"{what} must be a finite number, got {describe(v)}")
    if integer and isinstance(num, float) and not num.is_integer():
        value_error(where, f"{what} must be a whole number, got {describe(v)}")
    if min0 and num < 0:
        value_error(where, f"{what} must not be negative, got {describe(v)}")
    return num


def check_currency(where: str, v: object) -> str:
    """An ISO 4217 code: three letters, sent in upper case."""
    message = f'currency must be a three-letter ISO 4217 code such as "EUR", got {describe(v)}'
    if not isinstance(v, str):
        type_error(where, message)
    if not _CURRENCY.fullmatch(v):
        value_error(where, message)
    return v.upper()


def check_timestamp(where: str, v: object) -> int:
    """Milliseconds since the epoch from a ``datetime`` (naive: local time) or a number."""
    if isinstance(v, datetime):
        ms: float = v.timestamp() * 1000
    elif isinstance(v, int | float) and not isinstance(v, bool):
        ms = v
    else:
        type_error(
            where,
            f"timestamp must be a datetime or milliseconds since the epoch, got {describe(v)}",
        )
    if not math.isfinite(ms):
        value_error(where, f"timestamp must be a finite number, got {describe(v)}")
    if ms < 1e11:
        value_error(
            where, f"timestamp must be in milliseconds (got {ms!r}, which looks like seconds)"
        )
    return math.floor(ms)


def _scalar(where: str, what: str, v: object, limit: int | None = None) -> Json:
    if isinstance(v, str):
        if limit is not None and (n := u16len(v)) > limit:
            value_error(where, f"{what} must be at most {limit} characters, got {n}")
        return v if type(v) is str else str.__str__(v)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int | float | Decimal):
        return check_number(where, what, v)
    type_error(where, f"{what} must be a string, number, boolean or None, got {describe(v)}")


def check_items(where: str, items: object, strict: bool) -> list[Json]:
    """A list of flat items; ``strict`` (purchase and the GA4 helpers) also requires an
    ``item_id`` or an ``item_name`` on each."""
    if not isinstance(items, list | tuple):
        type_error(where, f"items must be a list, got {describe(items)}")
    if len(items) > ITEMS:
        value_error(where, f"items may hold at most {ITEMS} items, got {len(items)}")
    out: list[Json] = []
    for i, item in enumerate(items):
        at = f"items[{i}]"
        if not isinstance(item, Mapping):
            type_error(where, f"{at} must be a mapping (a dict), got {describe(item)}")
        if len(item) > PROPERTY_KEYS:
            value_error(where, f"{at} has more than {PROPERTY_KEYS} keys")
        fields: JsonObject = {}
        for key, v in item.items():
            if not isinstance(key, str):
                type_error(where, f"{at} keys must be strings, got {describe(key)}")
            if key == "price":
                fields[key] = check_number(where, f"{at}.price", v, min0=True)
            elif key == "quantity":
                fields[key] = check_number(where, f"{at}.quantity", v, min0=True, integer=True)
            else:
                fields[key] = _scalar(where, f"{at}.{key}", v)
        if strict:
            ident, name = fields.get("item_id"), fields.get("item_name")
            if not (isinstance(ident, str) and ident) and not (isinstance(name, str) and name):
                value_error(where, f"{at} needs an item_id or an item_name (a non-empty string)")
        out.append(fields)
    if (size := u16len(dumps(out))) > ITEMS_JSON_LENGTH:
        value_error(
            where, f"items must be at most {ITEMS_JSON_LENGTH} characters once encoded, got {size}"
        )
    return out


def check_properties(where: str, props: object, strict_items: bool = False) -> JsonObject | None:
    """At most 50 flat values; ``items`` may hold a list of flat mappings. A copy, or ``None``
    when empty."""
    if props is None:
        return None
    if not isinstance(props, Mapping):
        type_error(where, f"properties must be a mapping (a dict), got {describe(props)}")
    if len(props) > PROPERTY_KEYS:
        value_error(where, f"properties may have at most {PROPERTY_KEYS} keys, got {len(props)}")
    out: JsonObject = {}
    for key, v in props.items():
        if not isinstance(key, str):
            type_error(where, f"property names must be strings, got {describe(key)}")
        if not key or u16len(key) > PROPERTY_KEY_LENGTH:
            value_error(where, f"property names must be 1-{PROPERTY_KEY_LENGTH} characters")
        if key == "items" and isinstance(v, list | tuple):
            out[key] = check_items(where, v, strict_items)
        else:
            out[key] = _scalar(where, f"properties.{key}", v, PROPERTY_VALUE_LENGTH)
    return out or None
