"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it, and UTF-16 string lengths.

The Python and TypeScript clients send the same bytes for the same calls (see
``tests/client/test_wire_compat.py``). Python's ``json`` differs from ``JSON.stringify`` in three
places, handled here:

- numbers: ``30.0`` is ``30`` in JavaScript, ``1e16`` is ``10000000000000000``, ``1e-7`` is
  ``1e-7``: floats are written by ECMAScript's Number::toString rules;
- object keys that are array indices (``"0"``, ``"42"``) come first, in ascending order, as in
  every JavaScript object;
- a lone surrogate is written as a ``\\udxxx`` escape (well-formed ``JSON.stringify``).

String limits are counted as JavaScript counts them, in UTF-16 code units, so that both clients
accept and cut the same strings (never more than the service allows: it counts code points).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import TypeAlias

Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"
JsonObject: TypeAlias = "dict[str, Json]"

_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX_MAX = 2**32 - 2


_fast_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False
).encode


def dumps(value: Json) -> str:
    """Compact JSON text, byte for byte what ``JSON.stringify`` makes of the same value."""
    if _plain(value):
        # Python's C encoder writes these values exactly as JavaScript does.
        text: str = _fast_encode(value)
        if _SURROGATE.search(text):
            text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        return text
    parts: list[str] = []
    _write(value, parts.append)
    return "".join(parts)


def _plain(value: Json) -> bool:
    """Whether ``json`` and ``JSON.stringify`` agree on this value: no float that JavaScript
    writes differently (whole, or in exponent notation in either language), no key that may be
    an array index."""
    t = type(value)
    if t is dict:
        for key, item in value.items():  # type: ignore[union-attr]
            if key[:1].isdigit():
                return False
            ti = type(item)
            if ti is str or ti is int or ti is bool or item is None:
                continue
            if not _plain(item):
                return False
        return True
    if t is float:
        x = abs(value)  # type: ignore[arg-type]
        return 1e-4 <= x < 1e16 and not x.is_integer()
    if t is list:
        return all(_plain(item) for item in value)  # type: ignore[union-attr]
    return t is str or t is int or t is bool or value is None


def _write(value: Json, out: Callable[[str], None]) -> None:
    if value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, str):
        out(js_string(value))
    elif isinstance(value, int):
        out(str(value))
    elif isinstance(value, float):
        out(js_number(value))
    elif isinstance(value, Mapping):
        out("{")
        first = True
        for key in js_key_order(value):
            if not first:
                out(",")
            first = False
            out(js_string(key))
            out(":")
            _write(value[key], out)
        out("}")
    elif isinstance(value, Sequence):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(",")
            _write(item, out)
        out("]")
    else:  # pragma: no cover - the validators let nothing else through
        raise TypeError(f"not JSON: {type(value).__name__}")


def js_string(s: str) -> str:
    text: str = encode_basestring(s)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def js_number(x: float) -> str:
    """ECMAScript Number::toString for a finite float (shortest round-trip digits)."""
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 2**53:
        return str(int(x))
    sign = "-" if x < 0 else ""
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + exp
    return sign + digits[0] + "." + digits[1:] + "e" + exp


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) <= _ARRAY_INDEX_MAX


def js_key_order(obj: Mapping[str, object]) -> list[str]:
    """The order in which JavaScript lists an object's own keys."""
    keys = list(obj)
    indices = [k for k in keys if _is_array_index(k)]
    if not indices:
        return keys
    indices.sort(key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


def u16len(s: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.prototype.length``."""
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def truncate(s: str, limit: int) -> str:
    """At most ``limit`` UTF-16 code units from the start, never splitting a character."""
    if len(s) <= limit and u16len(s) <= limit:
        return s
    units = 0
    for i, c in enumerate(s):
        units += 2 if ord(c) > 0xFFFF else 1
        if units > limit:
            return s[:i]
    return s


def truncate_start(s: str, limit: int) -> str:
    """At most ``limit`` UTF-16 code units from the end, never splitting a character."""
    if len(s) <= limit and u16len(s) <= limit:
        return s
    units = 0
    for i in range(len(s) - 1, -1, -1):
        units += 2 if ord(s[i]) > 0xFFFF else 1
        if units > limit:
            return s[i + 1 :]
    return s
