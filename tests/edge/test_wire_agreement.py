"""The edge answers a corpus of bodies as the origin does. Both follow one description of the
wire format, edge/src/wire-format.json, generated from svc.schema (tests/test_schema.py checks
that it is, and that the origin and the clients keep its limits)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from svc.errors import ApiError
from svc.ingestion.wire import decode_body, validate_event
from svc.schema.wire import wire_format
from svc.settings import Settings
from tests.edge.support import BIN, EDGE, require_runtimes

BODY = wire_format()["body"]


def _origin(body: bytes, now: int) -> tuple[int, dict[str, Any]] | None:
    """The origin's answer to a body as svc.ingestion.service answers it before the key's
    project is looked at; None when some event would be stored."""
    try:
        decoded = decode_body(body, Settings().max_batch_events)
    except ApiError as exc:
        return exc.status, exc.body()
    errors: list[tuple[int, ApiError]] = []
    for i, obj in enumerate(decoded.events):
        try:
            validate_event(obj, now)
        except ApiError as exc:
            errors.append((i, exc))
    if len(errors) < len(decoded.events):
        return None
    first = errors[0][1]
    if not decoded.is_batch:
        return first.status, first.body()
    out = ApiError(
        f"no event of the batch was accepted: {first.message}", status=first.status, code=first.code
    ).body()
    out["accepted"] = 0
    out["rejected"] = [{"index": i, "error": e.body()["error"]} for i, e in errors]
    return first.status, out


def corpus(now: int) -> dict[str, bytes]:
    ok = {"event": "page_view", "url": "/"}

    def j(doc: Any) -> bytes:
        return json.dumps(doc, ensure_ascii=False).encode()

    def ev(**fields: Any) -> bytes:
        return j({**ok, **fields})

    deep: Any = 1
    for _ in range(700):
        deep = [deep]
    cases = {
        "valid": j(ok),
        "valid batch": j([ok, ok]),
        "valid events": j({"events": [ok]}),
        "empty": b"",
        "blank": b" \n\t ",
        "vertical tab": b"\x0b",
        "malformed": b'{"event": "x",',
        "bom": b"\xef\xbb\xbf" + j(ok),
        "number": b"42",
        "string": b'"x"',
        "null": b"null",
        "events not a list": j({"events": 5}),
        "events empty": j({"events": []}),
        "batch empty": b"[]",
        "too many": j([ok] * 1001),
        "no event": j({"url": "/"}),
        "event empty": ev(event=""),
        "event blank": ev(event="   "),
        "event ideographic space": ev(event="\u3000"),
        "event astral 200": ev(event="😀" * 200),
        "event astral 201": ev(event="😀" * 201),
        "event number": ev(event=5),
        "no url": j({"event": "x"}),
        "url empty": ev(url=""),
        "url relative": ev(url="nope"),
        "url full": ev(url="https://x.test/a"),
        "url long": ev(url="/" + "a" * 2048),
        "session number": ev(sessionId=5),
        "session long": ev(sessionId="a" * 129),
        "session empty": ev(sessionId=""),
        "project long": ev(projectId="a" * 65),
        "referrer long": ev(referrer="a" * 5000),
        "referrer number": ev(referrer=1),
        "event id long": ev(eventId="a" * 129),
        "user agent long": ev(userAgent="a" * 1025),
        "ip": ev(ip="1.2.3.4"),
        "ip newline": ev(ip="1.2.3.4\n"),
        "ip bad": ev(ip="zz"),
        "ip empty": ev(ip=""),
        "ip number": ev(ip=5),
        "ts string": ev(ts="x"),
        "ts bool": ev(ts=True),
        "ts float old": ev(ts=1.5),
        "ts now": ev(ts=now),
        "ts 8 days ago": ev(ts=now - 8 * 86400_000),
        "ts 10 minutes ahead": ev(ts=now + 600_000),
        "ts at the window": ev(ts=now + 300_000 + 30_000),
        "ts out of range": b'{"event":"x","url":"/","ts":1e400}',
        "screen float": ev(screen=1.5),
        "screen negative": ev(screen=-1),
        "screen big": ev(screen=70000),
        "screen bool": ev(screen=True),
        "screen": ev(screen=100),
        "props list": ev(properties=[]),
        "props string": ev(properties="x"),
        "props 51": ev(properties={f"k{i}": i for i in range(51)}),
        "props empty key": ev(properties={"": 1}),
        "props long key": ev(properties={"k" * 201: 1}),
        "props long value": ev(properties={"k": "v" * 2049}),
        "props nested": ev(properties={"k": {}}),
        "props list value": ev(properties={"k": [1]}),
        "props scalars": ev(properties={"a": 1, "b": 1.5, "c": None, "d": True, "e": "s"}),
        "items": ev(properties={"items": [{"item_id": "a", "price": 1}]}),
        "items not objects": ev(properties={"items": [1]}),
        "items 201": ev(properties={"items": [{}] * 201}),
        "items nested": ev(properties={"items": [{"a": {}}]}),
        "items large": ev(properties={"items": [{"k": "v" * 2000}] * 40}),
        "props reordered": ev(properties={"b": {}, "2": {}}),
        "mixed batch": j([ok, {"event": ""}]),
        "all bad batch": j([{"event": ""}, {"url": "/"}, 5]),
        "bad batch of events": j({"events": [{"event": "x"}]}),
        "lone surrogate": b'{"event":"","url":"/","x":"\\ud800"}',
        "deep": j({"event": "", "url": "/", "x": deep}),
        "invalid utf-8": b'{"event":"\xff","url":"/"}',
        "duplicate keys": b'{"event":"","event":"x","url":"/"}',
        "null fields": ev(sessionId=None, ts=None, properties=None, screen=None, ip=None),
    }
    return cases


def test_the_edge_answers_as_the_origin(tmp_path: Path) -> None:
    require_runtimes()
    module = tmp_path / "wire.mjs"
    subprocess.run(
        [
            str(BIN / "esbuild"),
            str(EDGE / "src" / "wire.ts"),
            "--bundle",
            "--format=esm",
            "--platform=node",
            f"--outfile={module}",
            "--log-level=warning",
        ],
        check=True,
    )
    runner = tmp_path / "judge.mjs"
    runner.write_text(
        "import { judge } from './wire.mjs';\n"
        "import { readFileSync } from 'node:fs';\n"
        "const cases = JSON.parse(readFileSync(0, 'utf8'));\n"
        f"const limits = {{ maxBodyBytes: {BODY['maxBytes']}, "
        f"maxBatchEvents: {BODY['maxBatchEvents']} }};\n"
        "const out = {};\n"
        "for (const [name, b64] of Object.entries(cases)) {\n"
        "  out[name] = judge(new Uint8Array(Buffer.from(b64, 'base64')), limits, Date.now());\n"
        "}\n"
        "console.log(JSON.stringify(out));\n"
    )
    now = int(time.time() * 1000)
    cases = corpus(now)
    payload = json.dumps({k: base64.b64encode(v).decode() for k, v in cases.items()})
    done = subprocess.run(
        ["node", str(runner)], input=payload, capture_output=True, text=True, check=True
    )
    verdicts: dict[str, Any] = json.loads(done.stdout)
    answered = set()
    for name, body in cases.items():
        verdict = verdicts[name]
        expected = _origin(body, now)
        if verdict["kind"] == "forward":
            continue  # the origin decides: always right
        answered.add(name)
        assert expected is not None, f"{name}: the edge answered what the origin would store"
        status, origin_body = expected
        assert verdict["status"] == status, name
        if origin_body["error"]["message"].startswith("the body is not valid JSON"):
            # the parsers' own words differ; the rest is the same
            assert verdict["body"]["error"]["message"].startswith("the body is not valid JSON")
            verdict["body"]["error"]["message"] = origin_body["error"]["message"]
        assert verdict["body"] == origin_body, name
    # what the edge must answer itself (it sends the rest on, where the origin answers)
    must = {
        "empty", "blank", "vertical tab", "malformed", "bom", "number", "string", "null",
        "events not a list", "events empty", "batch empty", "too many", "no event",
        "event empty", "event blank", "event ideographic space", "event astral 201",
        "event number", "no url", "url empty", "url relative", "url long", "session number",
        "session long", "project long", "referrer number", "event id long", "user agent long",
        "ip bad", "ip number", "ts string", "ts bool", "ts float old", "ts 8 days ago",
        "ts 10 minutes ahead", "screen float", "screen negative", "screen big", "screen bool",
        "props list", "props string", "props 51", "props empty key", "props long key",
        "props long value", "props nested", "props list value", "items not objects",
        "items 201", "items nested", "items large", "all bad batch", "bad batch of events",
    }  # fmt: skip
    assert must - answered == set()
    # and what it must send on: valid bodies, and what it cannot be sure of
    sent_on = {
        "valid", "valid batch", "valid events", "event astral 200", "url full",
        "session empty", "referrer long", "ip", "ip newline", "ip empty", "ts now",
        "ts at the window", "ts out of range", "screen", "props scalars", "items",
        "props reordered", "mixed batch", "lone surrogate", "deep", "invalid utf-8",
        "duplicate keys", "null fields",
    }  # fmt: skip
    assert sent_on & answered == set()
