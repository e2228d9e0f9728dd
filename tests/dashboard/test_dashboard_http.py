"""The dashboard's HTTP handlers without a browser: the shell, the hashed assets (types,
compression, caching, 304), what cannot be reached (path traversal, unlisted files, malformed
share tokens), and the size budget of the built files."""

from __future__ import annotations

import gzip
import importlib.resources
import json
import re
import warnings
from collections.abc import Iterator
from typing import Any

import brotli
import pytest
from starlette.applications import Starlette

from tests.dashboard.harness import dashboard_routes

with warnings.catch_warnings():
    # Starlette 1.x warns that it would rather drive TestClient with httpx2; httpx works.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

BUILT = importlib.resources.files("svc").joinpath("static/dashboard")
MANIFEST: dict[str, Any] = json.loads(BUILT.joinpath("manifest.json").read_text("utf-8"))
BUDGET_GZIP = 150 * 1024
SHARE = "svc_share_" + "A1b2C3d4" * 4


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(Starlette(routes=dashboard_routes()), base_url="http://svc.test") as c:
        yield c


def asset_urls(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="(/dashboard/assets/[^"]+)"', html)


def test_the_built_files_are_within_the_budget() -> None:
    files = MANIFEST["files"]
    on_disk = sorted(p.name for p in BUILT.iterdir() if p.name != "manifest.json")
    assert sorted(files) == on_disk, "every built file is listed in the manifest, and only those"
    total = 0
    for name in files:
        body = BUILT.joinpath(name).read_bytes()
        assert len(body) == files[name]["bytes"]
        total += len(gzip.compress(body, compresslevel=9))
    assert total <= BUDGET_GZIP, f"{total} B gzipped is over the budget"
    assert MANIFEST["totalGzip"] <= BUDGET_GZIP
    for name in files:
        assert re.match(r"^[a-z]+-[A-Z0-9]{8}\.(js|css)$", name), f"{name} is not content-hashed"


def test_no_cdn_or_remote_resource_is_referenced() -> None:
    for name in MANIFEST["files"]:
        text = BUILT.joinpath(name).read_text("utf-8")
        assert not re.search(r"https?://(?!www\.w3\.org/)[a-z0-9.-]+\.[a-z]{2,}", text), name


@pytest.mark.parametrize("path", ["/", "/dashboard"])
def test_the_shell(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["cache-control"] == "no-cache"
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "set-cookie" not in r.headers
    assert 'data-mode="dashboard"' in r.text
    assert f'src="/dashboard/assets/{MANIFEST["entry"]}"' in r.text
    for css in MANIFEST["css"]:
        assert f'href="/dashboard/assets/{css}"' in r.text
    assert "<script>" not in r.text, "no inline script (the CSP forbids it)"
    for url in asset_urls(r.text):
        assert client.get(url).status_code == 200


def test_the_share_page(client: TestClient) -> None:
    r = client.get(f"/share/{SHARE}")
    assert r.status_code == 200
    assert 'data-mode="share"' in r.text
    assert SHARE not in r.text, "the page reads the token from its URL; the shell does not echo it"
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "noindex" in r.headers["x-robots-tag"]


@pytest.mark.parametrize(
    "token",
    [
        "nope",
        "svc_live_" + "a" * 32,
        "svc_admin_" + "a" * 32,
        "svc_share_short",
        "svc_share_" + "!" * 30,
    ],
)
def test_share_page_needs_a_share_token(client: TestClient, token: str) -> None:
    r = client.get(f"/share/{token}")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_assets_are_immutable_typed_and_compressed(client: TestClient) -> None:
    for name in MANIFEST["files"]:
        body = BUILT.joinpath(name).read_bytes()
        plain = client.get(f"/dashboard/assets/{name}", headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200
        assert plain.content == body
        want = "text/javascript" if name.endswith(".js") else "text/css"
        assert plain.headers["content-type"] == f"{want}; charset=utf-8"
        assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert plain.headers["x-content-type-options"] == "nosniff"
        assert plain.headers["vary"] == "Accept-Encoding"

        br = client.get(f"/dashboard/assets/{name}", headers={"Accept-Encoding": "gzip, br"})
        assert br.headers["content-encoding"] == "br"
        assert br.headers["etag"] != plain.headers["etag"]
        gz = client.get(f"/dashboard/assets/{name}", headers={"Accept-Encoding": "gzip"})
        assert gz.headers["content-encoding"] == "gzip"
        assert gz.content == body  # decoded by the client


def test_brotli_body_decodes(client: TestClient) -> None:
    name = MANIFEST["entry"]
    with client.stream("GET", f"/dashboard/assets/{name}", headers={"Accept-Encoding": "br"}) as r:
        encoded = b"".join(r.iter_raw())
    assert r.headers["content-encoding"] == "br"
    assert brotli.decompress(encoded) == BUILT.joinpath(name).read_bytes()


def test_conditional_requests(client: TestClient) -> None:
    name = MANIFEST["entry"]
    first = client.get(f"/dashboard/assets/{name}", headers={"Accept-Encoding": "gzip"})
    again = client.get(
        f"/dashboard/assets/{name}",
        headers={"Accept-Encoding": "gzip", "If-None-Match": first.headers["etag"]},
    )
    assert again.status_code == 304
    assert again.content == b""
    other = client.get(
        f"/dashboard/assets/{name}",
        headers={"Accept-Encoding": "identity", "If-None-Match": first.headers["etag"]},
    )
    assert other.status_code == 200, "another encoding is another representation"


@pytest.mark.parametrize(
    "path",
    [
        "manifest.json",
        "../svc.js",
        "..%2Fsvc.js",
        "%2e%2e/%2e%2e/app.py",
        "../../app.py",
        "/etc/passwd",
        "x/../" + "main.js",
        ".hidden.js",
        "nope-ABCDEFGH.js",
        "main.js%00.css",
    ],
)
def test_nothing_else_is_reachable(client: TestClient, path: str) -> None:
    r = client.get(f"/dashboard/assets/{path}")
    assert r.status_code == 404
    if "../" not in path:  # (dot segments are resolved before routing: no route matches)
        assert r.json()["ok"] is False


def test_head_of_an_asset(client: TestClient) -> None:
    name = MANIFEST["css"][0]
    r = client.head(f"/dashboard/assets/{name}", headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200
    assert r.content == b""
    assert int(r.headers["content-length"]) == MANIFEST["files"][name]["bytes"]
