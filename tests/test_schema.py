"""The event schema is written once (svc.schema), and what derives from it agrees with it: the
generated wire-format files, the origin's validation at every described limit, the stored row
the pipeline builds, the dimensions, and both clients' limits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import svc_client
from svc_client import _core
from svc_client import _validate as client_validate

from svc.errors import ApiError
from svc.ingestion.enrich.geo import Geo
from svc.ingestion.pipeline import EventDraft, RequestContext
from svc.ingestion.urls import PageUrl
from svc.ingestion.wire import decode_body, decode_valid, validate_event
from svc.meta.store import Project
from svc.schema.__main__ import GENERATED, main, stale
from svc.schema.dimensions import DIMENSIONS
from svc.schema.row import EVENT_COLUMNS, EventRow
from svc.schema.wire import RawEvent, limits_of, render, wire_format
from svc.settings import Settings
from svc.storage.events import ch_time
from tests.support import ROOT

NOW = 1_790_000_000_000
OK = {"event": "page_view", "url": "/"}


# the generated files ------------------------------------------------------------------------


def test_the_committed_wire_format_files_are_the_generated_ones() -> None:
    assert stale(ROOT) == [], "run python -m svc.schema and commit"
    assert main(["--check", "--root", str(ROOT)]) == 0
    committed = json.loads((ROOT / "edge/src/wire-format.json").read_text())
    assert committed == wire_format()


def test_python_m_svc_schema_writes_the_files_and_check_finds_a_stale_one(tmp_path: Any) -> None:
    for path in GENERATED:
        (tmp_path / path).parent.mkdir(parents=True)
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert main(["--root", str(tmp_path)]) == 0
    assert stale(tmp_path) == []
    (tmp_path / "edge/src/wire-format.json").write_text("{}\n")
    assert stale(tmp_path) == [next(iter(GENERATED))]


# the origin at each described limit -------------------------------------------------------


def verdict(event: dict[str, Any], now: int = NOW) -> str | RawEvent:
    """The general path's answer to one event: the event, or the field its error names. The
    fast path must agree: it decodes what is valid the same way, and steps aside otherwise."""
    body = json.dumps(event).encode()
    try:
        raw = validate_event(json.loads(body), now)
    except ApiError as exc:
        assert decode_valid(body, 1000, now) is None, event
        return str(exc.body()["error"]["field"])
    fast = decode_valid(body, 1000, now)
    if fast is not None:  # the fast path may step aside, but not decode otherwise
        assert fast.events == [raw]
    return raw


def _string_for(name: str, length: int) -> str:
    if name == "url":
        return "/" + "a" * (length - 1)
    if name == "ip":
        return "1" * length
    return "a" * length


def check_string_limits(fields: dict[str, dict[str, Any]]) -> list[str]:
    """Every field with a ``maxLength`` (of a JSON Schema or of the wire-format description):
    a value that long is taken, one character more is refused naming the field (or cut, where
    it says ``truncate``). The names of the fields checked."""
    checked = []
    for name, rules in fields.items():
        rules = _string_rules(rules)
        if "maxLength" not in rules:
            continue
        top = rules["maxLength"]
        at = verdict({**OK, name: _string_for(name, top)})
        assert isinstance(at, RawEvent), (name, at)
        over = verdict({**OK, name: _string_for(name, top + 1)})
        if rules.get("truncate"):
            assert isinstance(over, RawEvent) and over.referrer == "a" * top, name
        else:
            assert over == name, (name, over)
        checked.append(name)
    return checked


def _string_rules(rules: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema's ``anyOf: [{string...}, {null}]`` as the string's rules."""
    for option in rules.get("anyOf", ()):
        if option.get("type") == "string":
            return {**rules, **option}
    return rules


def test_the_origin_refuses_just_past_every_described_limit() -> None:
    fmt = wire_format()
    ev = fmt["event"]
    checked = check_string_limits(ev)
    assert set(checked) == {
        "event", "url", "sessionId", "projectId", "referrer", "eventId", "userAgent", "ip"
    }  # fmt: skip
    assert ev["event"]["required"] and ev["url"]["required"]
    assert verdict({"url": "/"}) == "event" and verdict({"event": "x"}) == "url"
    assert verdict({**OK, "event": ""}) == verdict({**OK, "event": "  "}) == "event"
    assert verdict({**OK, "url": "nope"}) == "url"
    assert verdict({**OK, "ip": "zz"}) == "ip"
    screen = ev["screen"]
    for ok in (screen["minimum"], screen["maximum"]):
        assert isinstance(verdict({**OK, "screen": ok}), RawEvent)
    for bad in (screen["minimum"] - 1, screen["maximum"] + 1):
        assert verdict({**OK, "screen": bad}) == "screen"
    ts = ev["ts"]
    for ok in (NOW - ts["pastWindowMs"], NOW + ts["futureWindowMs"]):
        assert isinstance(verdict({**OK, "ts": ok}), RawEvent)
    for bad in (NOW - ts["pastWindowMs"] - 1, NOW + ts["futureWindowMs"] + 1):
        assert verdict({**OK, "ts": bad}) == "ts"
    props = ev["properties"]
    check_properties(
        props["maxKeys"], props["maxKeyLength"], props["maxValueLength"], **props["items"]
    )
    body = fmt["body"]
    assert (
        len(decode_body(json.dumps([OK] * body["maxBatchEvents"]).encode(), 1000).events)
        == (body["maxBatchEvents"])
    )
    with pytest.raises(ApiError) as too_many:
        decode_body(json.dumps([OK] * (body["maxBatchEvents"] + 1)).encode(), 1000)
    assert too_many.value.status == 413
    settings = Settings()
    assert (settings.max_body_bytes, settings.max_batch_events) == (
        body["maxBytes"],
        body["maxBatchEvents"],
    )


def test_the_origin_refuses_just_past_every_described_kind_bound() -> None:
    """The extensions' kinds (``kinds`` of the description): each number is taken at its
    bounds and refused just past them, each required property refused when absent, each
    closed kind refuses another property; both paths agree (:func:`verdict`)."""
    kinds = wire_format()["kinds"]
    assert set(kinds) == {"engagement", "web_vitals", "outbound", "download", "404"}
    for name, kind in kinds.items():
        props = kind["properties"]
        base = {
            k: r.get("minimum", "https://x.test/") for k, r in props.items() if r.get("required")
        }

        def props_verdict(p: dict[str, Any], name: str = name) -> str | RawEvent:
            return verdict({"event": name, "url": "/", "properties": p})

        assert isinstance(props_verdict(base), RawEvent), name
        for key, rule in props.items():
            where = f"properties.{key}"
            if rule["type"] == "string":
                assert isinstance(props_verdict({**base, key: "https://a.test/x"}), RawEvent)
                assert props_verdict({**base, key: "ftp://a.test/x"}) == where
                too_long = "https://a.test/" + "x" * rule["maxLength"]
                assert props_verdict({**base, key: too_long}) == where
                continue
            for ok in (rule["minimum"], rule["maximum"]):
                assert isinstance(props_verdict({**base, key: ok}), RawEvent), (name, key, ok)
            for bad in (rule["minimum"] - 1, rule["maximum"] + 1, str(rule["maximum"]), True):
                assert props_verdict({**base, key: bad}) == where, (name, key, bad)
            if rule.get("required"):
                assert props_verdict({k: v for k, v in base.items() if k != key}) == where
        other = props_verdict({**base, "plan": "pro"})
        if kind["otherProperties"]:
            assert isinstance(other, RawEvent), name
        else:
            assert other == "properties.plan", name


def check_properties(
    max_keys: int, max_key: int, max_value: int, maxItems: int, maxJsonLength: int
) -> None:
    def props(value: dict[str, Any]) -> str | RawEvent:
        return verdict({**OK, "properties": value})

    assert isinstance(props({f"k{i}": i for i in range(max_keys)}), RawEvent)
    assert props({f"k{i}": i for i in range(max_keys + 1)}) == "properties"
    assert isinstance(props({"k" * max_key: 1}), RawEvent)
    assert props({"k" * (max_key + 1): 1}) == "properties"
    assert isinstance(props({"k": "v" * max_value}), RawEvent)
    assert props({"k": "v" * (max_value + 1)}) == "properties.k"
    assert isinstance(props({"items": [{}] * maxItems}), RawEvent)
    assert props({"items": [{}] * (maxItems + 1)}) == "properties.items"
    frame = len('[{"k":""}]')  # the items' JSON as the origin encodes it: no spaces
    assert isinstance(props({"items": [{"k": "v" * (maxJsonLength - frame)}]}), RawEvent)
    assert props({"items": [{"k": "v" * (maxJsonLength - frame + 1)}]}) == "properties.items"


# the stored row -----------------------------------------------------------------------------


def test_the_pipeline_fills_every_column_of_the_row_by_its_name() -> None:
    """EventDraft.to_row builds the row positionally (it is faster): each column gets the value
    meant for it, whatever the order of EventRow's fields."""
    raw = RawEvent(
        name="signup",
        url="https://h.test/p?utm_source=x",
        properties={"k": "v"},
        referrer="R",
        ts_ms=NOW - 1000,
        event_id="E",
        screen=7,
    )
    project = Project("svc_proj_p", "p", "UTC", (), "free")
    ctx = RequestContext(project, "secret", "", "", None, NOW)
    query = {"utm_source": "US", "utm_medium": "UM", "utm_campaign": "UC", "utm_content": "UN",
             "utm_term": "UT", "gclid": "G"}  # fmt: skip
    draft = EventDraft(
        raw=raw,
        ctx=ctx,
        ts_ms=NOW - 1000,
        address="",
        user_agent="",
        page=PageUrl("h.test", "/p", query),
        browser="B",
        browser_version="BV",
        os="O",
        os_version="OV",
        device="D",
        source="S",
        channel="C",
        referrer_host="RH",
        geo=Geo("CO", "RE", "CI"),
        visitor_id=11,
        session_id=22,
        session_start_ms=NOW - 5000,
    )
    row = draft.to_row()
    expected = {
        "project_id": "svc_proj_p",
        "ts": ch_time(NOW - 1000),
        "received_at": ch_time(NOW),
        "event_id": "E",
        "name": "signup",
        "session_id": 22,
        "visitor_id": 11,
        "hostname": "h.test",
        "path": "/p",
        "url": "https://h.test/p?utm_source=x",
        "referrer": "R",
        "referrer_host": "RH",
        "source": "S",
        "channel": "C",
        "utm_source": "us",
        "utm_medium": "um",
        "utm_campaign": "UC",
        "utm_content": "UN",
        "utm_term": "UT",
        "click_id": "gclid:G",
        "properties": {"k": "v"},
        "browser": "B",
        "browser_version": "BV",
        "os": "O",
        "os_version": "OV",
        "device": "D",
        "screen_width": 7,
        "country": "CO",
        "region": "RE",
        "city": "CI",
        "session_start": ch_time(NOW - 5000),
    }
    assert tuple(expected) == EVENT_COLUMNS
    assert {name: getattr(row, name) for name in EVENT_COLUMNS} == expected
    assert isinstance(row, EventRow)


def test_every_dimension_reads_columns_of_the_row() -> None:
    functions = {"toString", "concat", "tupleElement"}
    for dim in DIMENSIONS.values():
        names = set(re.findall(r"\b[A-Za-z_]+\b", re.sub(r"'[^']*'", "", dim.column)))
        assert names - functions <= set(EVENT_COLUMNS), dim


# the clients --------------------------------------------------------------------------------


def test_the_python_client_has_the_described_limits() -> None:
    """svc_client cannot import the server: its own constants, checked here."""
    ev = wire_format()["event"]
    v = client_validate
    assert ev["event"]["maxLength"] == v.NAME_LENGTH
    assert v.URL_LENGTH == ev["url"]["maxLength"] == ev["referrer"]["maxLength"]
    assert ev["sessionId"]["maxLength"] == v.SESSION_ID_LENGTH
    assert ev["eventId"]["maxLength"] == v.EVENT_ID_LENGTH
    assert ev["projectId"]["maxLength"] == v.PROJECT_ID_LENGTH
    assert ev["userAgent"]["maxLength"] == v.USER_AGENT_LENGTH
    assert ev["properties"]["maxKeys"] == v.PROPERTY_KEYS
    assert ev["properties"]["maxKeyLength"] == v.PROPERTY_KEY_LENGTH
    assert ev["properties"]["maxValueLength"] == v.PROPERTY_VALUE_LENGTH
    assert ev["properties"]["items"]["maxItems"] == v.ITEMS
    assert ev["properties"]["items"]["maxJsonLength"] == v.ITEMS_JSON_LENGTH
    assert ev["properties"]["maxValueLength"] >= v.STACK_LENGTH
    assert v._IP.pattern == ev["ip"]["pattern"].strip("^$")
    body = wire_format()["body"]
    assert body["maxBatchEvents"] >= _core.MAX_BATCH_SIZE
    assert body["maxBytes"] >= _core.MAX_BODY_BYTES
    assert svc_client.create_client  # the client imports on its own (its tests: clients/python)


def _js_limits() -> dict[str, Any]:
    node = shutil.which("node")
    built = ROOT / "clients/js/dist/esm/validate.js"
    if node is None or not built.exists():
        pytest.skip("node or the built TypeScript client (make client-js-build) is missing")
    done = subprocess.run(
        [node, "--input-type=module", "-e",
         f"const m = await import({json.dumps(built.as_uri())});"
         "const w = await import(new URL('./limits.js', "
         f"{json.dumps(built.as_uri())}).href);"
         "console.log(JSON.stringify({limits: m.LIMITS, wire: w.WIRE_LIMITS}));"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_the_typescript_client_has_the_described_limits() -> None:
    """validate.ts takes its LIMITS from limits.ts, compiled in by its build: the built
    client holds the description's numbers, and its LIMITS are those."""
    got = _js_limits()
    assert got["wire"] == limits_of(wire_format())
    ev = wire_format()["event"]
    js = got["limits"]
    pairs: dict[str, Callable[[], int]] = {
        "nameLength": lambda: ev["event"]["maxLength"],
        "urlLength": lambda: ev["url"]["maxLength"],
        "sessionIdLength": lambda: ev["sessionId"]["maxLength"],
        "eventIdLength": lambda: ev["eventId"]["maxLength"],
        "userAgentLength": lambda: ev["userAgent"]["maxLength"],
        "propertyKeys": lambda: ev["properties"]["maxKeys"],
        "propertyKeyLength": lambda: ev["properties"]["maxKeyLength"],
        "propertyValueLength": lambda: ev["properties"]["maxValueLength"],
        "items": lambda: ev["properties"]["items"]["maxItems"],
        "itemsJsonLength": lambda: ev["properties"]["items"]["maxJsonLength"],
        "batchEvents": lambda: wire_format()["body"]["maxBatchEvents"],
    }
    for key, value in pairs.items():
        assert js[key] == value(), key
    text = (ROOT / "clients/js/src/validate.ts").read_text()
    assert "WIRE_LIMITS" in text and "200," not in text  # no limit of the service written in it
    assert render("ts") == (ROOT / "clients/js/src/limits.ts").read_text()
