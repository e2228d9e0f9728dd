"""The fast path of POST /analytics' wire format (``decode_valid``: typed decoding in C) must
answer exactly as the general path (``decode_body`` + ``validate_event``) or step aside.

For any body: when the fast path gives events, the general path gives the same events and no
error; when the general path accepts every event of a body, the fast path takes it too (it is
only a fast path if it is taken, except for a float `ts` or null `properties`)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from svc.errors import ApiError
from svc.ingestion.wire import Body, decode_body, decode_valid, validate_event

NOW = 1_795_000_000_000
MAX_EVENTS = 1000

text = st.one_of(
    st.sampled_from(["", " ", "x", "/", "/a", "https://acme.test/p?q=1", "é" * 129, "1.2.3.4"]),
    st.text(max_size=12),
)
value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
timestamps = st.one_of(
    value,
    st.integers(NOW - 8 * 86_400_000, NOW + 600_000),
    st.floats(NOW - 8 * 86_400_000, NOW + 600_000),
)
properties = st.one_of(
    value,
    st.dictionaries(
        st.one_of(st.sampled_from(["plan", "items", "n"]), st.text(max_size=4)),
        st.one_of(value, st.just([{"item_id": "a", "price": 1}])),
        max_size=4,
    ),
)
valid_event = st.fixed_dictionaries(
    {"event": st.sampled_from(["page_view", "signup"]), "url": st.sampled_from(["/", "/a"])},
    optional={
        "sessionId": st.sampled_from(["s1", ""]),
        "referrer": st.sampled_from(["https://google.com/", "", "r" * 3000]),
        "ts": st.integers(NOW - 86_400_000, NOW),
        "screen": st.integers(0, 65535),
        "ip": st.sampled_from(["10.0.0.1", "::1"]),
        "properties": st.dictionaries(st.sampled_from(["plan", "n"]), st.integers(), max_size=2),
    },
)
any_event = st.one_of(
    valid_event,
    st.fixed_dictionaries(
        {},
        optional={
            "event": value,
            "url": value,
            "sessionId": value,
            "projectId": value,
            "properties": properties,
            "referrer": value,
            "ts": timestamps,
            "eventId": value,
            "userAgent": value,
            "ip": value,
            "screen": st.one_of(value, st.integers(-5, 70_000)),
            "other": value,
        },
    ),
    value,
)
bodies = st.one_of(
    any_event,
    st.lists(any_event, max_size=4),
    st.lists(valid_event, max_size=4),
    st.fixed_dictionaries({"events": st.lists(valid_event, max_size=3)}),
)


def general(data: bytes) -> Body | None:
    """The general path's events, or None when it refuses the body or any event."""
    try:
        body = decode_body(data, MAX_EVENTS)
        return Body([validate_event(e, NOW) for e in body.events], body.is_batch)
    except ApiError:
        return None


@settings(max_examples=1500, deadline=None)
@given(bodies)
def test_the_fast_path_answers_as_the_general_path(doc: Any) -> None:
    data = json.dumps(doc).encode()
    fast = decode_valid(data, MAX_EVENTS, NOW)
    slow = general(data)
    if fast is not None:
        assert fast == slow
    elif slow is not None:  # a valid body of a shape the fast path takes must be taken
        taken = data.lstrip()[:1] == b"[" or (isinstance(doc, dict) and "event" in doc)
        events = doc if isinstance(doc, list) else [doc]
        # (a float `ts` and null `properties` are valid, and left to the general path)
        plain = all(
            not isinstance(e.get("ts"), float) and e.get("properties", {}) is not None
            for e in events
        )
        assert not (taken and plain), f"the fast path missed a valid body: {data[:200]!r}"


def test_fast_path_examples() -> None:
    body = json.dumps(
        [
            {"event": "page_view", "url": "/a", "sessionId": "", "referrer": "r" * 3000},
            {"event": "buy", "url": "https://x.test/", "ts": NOW - 1, "properties": {"n": 2}},
        ]
    ).encode()
    decoded = decode_valid(body, MAX_EVENTS, NOW) or Body([], False)
    events = decoded.events
    assert decoded.is_batch and len(events) == 2
    assert events[0].session_id is None and events[0].referrer == "r" * 2048
    assert events[1].ts_ms == NOW - 1 and events[1].properties == {"n": "2"}
    for refused in (
        b'{"events": [{"event": "a", "url": "/"}]}',  # this shape takes the general path
        b'[{"event": " ", "url": "/"}]',
        b'[{"event": "a", "url": "a"}]',
        b'[{"event": "a", "url": "/", "ts": 1}]',
        b'[{"event": "a", "url": "/", "screen": true}]',
        b"[]",
        b'"x"',
    ):
        assert decode_valid(refused, MAX_EVENTS, NOW) is None, refused


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), scalars, max_size=6))
def test_property_values_are_stored_as_their_json_text(props: dict[str, Any]) -> None:
    """A string is stored as it is; any other scalar as its JSON text (as msgspec writes it)."""
    import msgspec

    from svc.ingestion.wire import _properties

    want = {
        k: v if isinstance(v, str) else msgspec.json.encode(v).decode() for k, v in props.items()
    }
    assert _properties(msgspec.json.decode(msgspec.json.encode(props))) == want
