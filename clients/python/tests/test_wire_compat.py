"""The Python and TypeScript clients send the same bytes for the same calls.

The TypeScript side is real: Node runs the BUILT package (clients/js/dist/esm/index.js) with an
injected ``fetch`` that records the request bodies; the Python side posts through an
``httpx.MockTransport``. Only the values that differ on every call are normalised: ``ts``,
``eventId``, and the ``stack`` of an exception (a JavaScript stack and a Python traceback).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from scripted import ENDPOINT, JS, Errors, Script
from svc_client import GA4_HELPERS, create_client

DIST = JS / "dist" / "esm" / "index.js"
FIXTURE = JS / "test" / "fixtures" / "wire-body.json"
NODE = shutil.which("node") or ("/usr/bin/node" if Path("/usr/bin/node").exists() else None)
PROJECT = "svc_proj_jsclient"

# The same calls in JavaScript (below) and in Python (python_bodies).
NODE_SCRIPT = """
const { createClient } = await import(process.argv[1]);
const bodies = [];
const fetch = async (url, init) => {
  bodies.push(init.body);
  return { status: 200, headers: { get: () => null }, text: async () => '{"ok":true,"ts":0}' };
};
const client = createClient({
  apiKey: 'svc_live_wire', projectId: process.argv[2], endpoint: 'http://svc.test/analytics',
  flushInterval: 0, fetch, onError: (e) => { throw e; },
});
// The four reference calls, in one request.
client.track('signup', { plan: 'pro' });
client.pageView('/pricing');
client.purchase('T1', 30, 'EUR', [{ item_id: 'sku1', price: 10, quantity: 3 }]);
client.captureException(new Error('boom'), { fatal: true });
await client.flush();
// More of the wire format: context fields, numbers, non-ASCII text, key order, GA4 helpers.
client.track('mixed', {
  'ünï': 'ça va 😀 \\u2028 "q" \\\\ \\t', n: 1.5, big: 1e21, small: 1e-7, whole: 2, neg: -0,
  huge: 123456789012345680000, tiny: 0.000001, nul: null, t: true, f: false,
  '10': 'ten', '2': 'two', items: [{ item_id: 'a', price: 0.1, quantity: 2 }],
}, {
  url: 'https://acme.test/a?b=c', referrer: 'https://www.google.com/', sessionId: 's-1',
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64)', ip: '203.0.113.7',
});
client.pageView('https://acme.test/docs', { referrer: 'https://news.example/' });
client.addToCart({
  currency: 'eur', value: 19.99, items: [{ item_id: 'SKU_1', price: 19.99, quantity: 1 }],
});
client.beginCheckout({ currency: 'EUR', value: 20, coupon: 'X', items: [{ item_name: 'Shirt' }] });
client.login({ method: 'google' });
client.captureException('plain message');
client.tutorialBegin();
client.purchase('T2', 59.9, 'usd', [{ item_id: 'x' }], {
  coupon: 'C', shipping: 4.9, tax: 0, affiliation: 'Web',
});
await client.flush();
await client.shutdown();
process.stdout.write(JSON.stringify(bodies));
"""


class Error(Exception):
    """Named as JavaScript's ``Error``, so that both descriptions read "Error: boom"."""


def python_bodies(project_id: str = PROJECT) -> list[str]:
    script, errors = Script(), Errors()
    c = create_client(
        api_key="svc_live_wire",
        project_id=project_id,
        endpoint=ENDPOINT,
        flush_interval=0,
        transport=script.transport(),
        on_error=errors,
    )
    c.track("signup", {"plan": "pro"})
    c.page_view("/pricing")
    c.purchase("T1", 30, "EUR", [{"item_id": "sku1", "price": 10, "quantity": 3}])
    try:
        raise Error("boom")
    except Error as exc:
        c.capture_exception(exc, fatal=True)
    c.flush()
    c.track(
        "mixed",
        {
            "ünï": 'ça va 😀 \u2028 "q" \\ \t',
            "n": 1.5,
            "big": 1e21,
            "small": 1e-7,
            "whole": 2.0,
            "neg": -0.0,
            "huge": 123456789012345680000.0,
            "tiny": 0.000001,
            "nul": None,
            "t": True,
            "f": False,
            "10": "ten",
            "2": "two",
            "items": [{"item_id": "a", "price": 0.1, "quantity": 2}],
        },
        url="https://acme.test/a?b=c",
        referrer="https://www.google.com/",
        session_id="s-1",
        user_agent="Mozilla/5.0 (X11; Linux x86_64)",
        ip="203.0.113.7",
    )
    c.page_view("https://acme.test/docs", referrer="https://news.example/")
    c.add_to_cart(
        [{"item_id": "SKU_1", "price": 19.99, "quantity": 1}], currency="eur", value=19.99
    )
    c.begin_checkout([{"item_name": "Shirt"}], currency="EUR", value=20, coupon="X")
    c.login("google")
    c.capture_exception("plain message")
    c.tutorial_begin()
    c.purchase(
        "T2", 59.9, "usd", [{"item_id": "x"}], coupon="C", shipping=4.9, tax=0, affiliation="Web"
    )
    c.close()
    assert errors == []
    return [call.body.decode() for call in script.calls]


def built_client() -> Path:
    """The built ESM entry of the TypeScript client: clients/js/dist, built with its own
    ``npm run build`` when missing; when it is older than the sources, a fresh build of them in
    a temporary directory (clients/js/dist belongs to its own tests)."""
    assert NODE is not None
    if not DIST.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("clients/js is not built and npm is missing to build it")
        subprocess.run([npm, "--prefix", str(JS), "run", "build"], check=True, timeout=300)
        return DIST
    newest_source = max(p.stat().st_mtime for p in (JS / "src").glob("*.ts"))
    if DIST.stat().st_mtime >= newest_source:
        return DIST
    out = Path(tempfile.mkdtemp(prefix="svc-js-build-"))
    tsc = JS / "node_modules" / "typescript" / "bin" / "tsc"
    subprocess.run(
        [NODE, str(tsc), "-p", str(JS / "tsconfig.json"), "--outDir", str(out)],
        check=True,
        timeout=300,
    )
    (out / "package.json").write_text('{"type":"module"}\n')
    return out / "index.js"


def node_bodies() -> list[str]:
    if NODE is None:
        pytest.skip("node is not installed: the TypeScript client cannot run")
    entry = built_client()
    for _ in range(3):
        r = subprocess.run(
            [NODE, "--input-type=module", "-e", NODE_SCRIPT, entry.as_uri(), PROJECT],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode == 0:
            bodies: list[str] = json.loads(r.stdout)
            return bodies
        time.sleep(1)  # clients/js may be being rebuilt by its own tests at this moment
    raise AssertionError(f"node failed: {r.stderr}")


def normalize(body: str) -> str:
    body = re.sub(r'"ts":\d+', '"ts":0', body)
    body = re.sub(r'"eventId":"[^"]*"', '"eventId":"<eventId>"', body)
    return re.sub(r'"stack":"(?:[^"\\]|\\.)*"', '"stack":"<stack>"', body)


def test_python_and_typescript_send_the_same_bytes() -> None:
    js, py = node_bodies(), python_bodies()
    assert len(js) == len(py) == 2
    for a, b in zip(js, py, strict=True):
        assert normalize(b) == normalize(a)
    # What normalize() hides has the same form on both sides.
    for body in js + py:
        for ev in json.loads(body)["events"]:
            assert isinstance(ev["ts"], int) and ev["ts"] > 1e12
            assert re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                ev["eventId"],
            )
    # Both send a stack with the reference exception; each in its language's form.
    js_exc = json.loads(js[0])["events"][3]["properties"]
    py_exc = json.loads(py[0])["events"][3]["properties"]
    assert js_exc["stack"].startswith("Error: boom\n    at ")
    assert py_exc["stack"].startswith("Traceback (most recent call last):")
    assert py_exc["stack"].endswith("Error: boom")


def test_the_reference_calls_match_the_typescript_wire_fixture() -> None:
    """clients/js/test/fixtures/wire-body.json holds the TypeScript client's exact bytes for the
    four reference calls (its own wire test checks them): the Python client sends them too."""
    if not FIXTURE.exists():
        pytest.skip("clients/js/test/fixtures/wire-body.json is missing")
    expected = normalize(FIXTURE.read_text().strip())
    assert normalize(python_bodies()[0]) == expected


def test_the_body_is_the_one_the_service_reads() -> None:
    body: dict[str, Any] = json.loads(python_bodies()[0])
    assert list(body) == ["events"]
    assert [list(e) for e in body["events"]][:2] == [
        ["event", "url", "projectId", "properties", "ts", "eventId"],
        ["event", "url", "projectId", "ts", "eventId"],
    ]


def test_every_helper_of_the_typescript_client_exists() -> None:
    # Read from the TypeScript source: its GA4_HELPERS table and the two helpers without params.
    if not (JS / "src" / "client.ts").exists():
        pytest.skip("clients/js is not beside this client (not a checkout of the repository)")
    source = (JS / "src" / "client.ts").read_text()
    ts = dict(re.findall(r"^\s+(\w+): \['(\w+)', \[", source, re.M))
    ts.update(re.findall(r"enqueue\('(tutorial\w+)', '(\w+)'", source))
    assert len(ts) == 25, ts
    snake = {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in ts.items()}
    assert snake == dict(GA4_HELPERS)
