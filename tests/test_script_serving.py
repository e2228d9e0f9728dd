"""The browser script as served at /svc/js: size budget, headers, ETag/304, gzip and brotli; and
its builds with opt-in extensions at /svc/js/<names> (issue 20): every combination's size, and
the same serving.

Runs on a tiny Starlette app that mounts ``serve_script`` alone, so it needs nothing else of
the service.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import itertools
import re
import warnings
from collections.abc import Iterator

import brotli
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from svc.http.script import EXTENSIONS, choose_encoding, parse_extensions, script_file, serve_script

with warnings.catch_warnings():
    # Starlette 1.x warns that it would rather drive TestClient with httpx2; httpx works.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

SPEC_LIMIT = 2048  # the specification: "a browser script under 2 KB"
BUDGET_MINIFIED = 1024  # issue 4: the default build
BUDGET_GZIPPED = 600

STATIC = importlib.resources.files("svc").joinpath("static")
SCRIPT = STATIC.joinpath("svc.js").read_bytes()

#: Every combination of the extensions (the empty one is the default build), sorted names.
COMBINATIONS = [
    c for n in range(len(EXTENSIONS) + 1) for c in itertools.combinations(EXTENSIONS, n)
]
#: A string that is in a build exactly when the extension is (its event's name).
MARKERS = {
    "404": b'"404"',
    "downloads": b'"download"',
    "engagement": b'"engagement"',
    "outbound": b'"outbound"',
    "vitals": b'"web_vitals"',
}


def build(extensions: tuple[str, ...]) -> bytes:
    return importlib.resources.files("svc").joinpath(script_file(extensions)).read_bytes()


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = Starlette(
        routes=[
            Route("/svc/js", serve_script, methods=["GET", "HEAD"]),
            Route("/svc/js/{extensions}", serve_script, methods=["GET", "HEAD"]),
        ]
    )
    with TestClient(app, base_url="http://svc.test") as c:
        yield c


# --- size -------------------------------------------------------------------------------------


def test_under_the_specification_limit() -> None:
    assert 0 < len(SCRIPT) <= SPEC_LIMIT, f"svc.js is {len(SCRIPT)} bytes minified"


def test_within_the_size_budget() -> None:
    gzipped = len(gzip.compress(SCRIPT, compresslevel=9, mtime=0))
    assert len(SCRIPT) <= BUDGET_MINIFIED, f"{len(SCRIPT)} bytes minified > {BUDGET_MINIFIED}"
    assert gzipped <= BUDGET_GZIPPED, f"{gzipped} bytes gzipped > {BUDGET_GZIPPED}"


def test_the_built_file_is_minified_and_self_contained() -> None:
    text = SCRIPT.decode("utf-8")
    assert text.count("\n") <= 1, "the shipped file should be the minified build"
    assert "sourceMappingURL" not in text
    assert "import " not in text and "require(" not in text
    # The wire contract the server relies on is in the build.
    for needle in ("/analytics?key=", "page_view", "sendBeacon", "svc_ignore", "projectId"):
        assert needle in text, needle


# --- headers ----------------------------------------------------------------------------------


def test_get_serves_the_script_with_its_headers(client: TestClient) -> None:
    r = client.get("/svc/js", headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200
    assert r.content == SCRIPT
    assert r.headers["content-type"] == "application/javascript; charset=utf-8"
    assert r.headers["content-length"] == str(len(SCRIPT))
    assert "content-encoding" not in r.headers
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["vary"] == "Accept-Encoding"
    cache_control = r.headers["cache-control"]
    assert "public" in cache_control
    max_age = re.search(r"max-age=(\d+)", cache_control)
    assert max_age and int(max_age.group(1)) >= 3600
    assert "immutable" not in cache_control  # the URL is unversioned: it must revalidate
    assert "set-cookie" not in r.headers
    assert not r.cookies


def test_etag_is_strong_and_a_hash_of_the_content(client: TestClient) -> None:
    r = client.get("/svc/js", headers={"Accept-Encoding": "identity"})
    etag = r.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{16,}"', etag), etag  # strong: no W/
    assert hashlib.sha256(SCRIPT).hexdigest().startswith(etag.strip('"'))


def test_head_has_the_headers_and_no_body(client: TestClient) -> None:
    get_r = client.get("/svc/js", headers={"Accept-Encoding": "gzip"})
    r = client.head("/svc/js", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200
    assert r.content == b""
    for name in ("content-type", "etag", "cache-control", "content-encoding", "content-length"):
        assert r.headers[name] == get_r.headers[name], name


def test_other_methods_are_refused(client: TestClient) -> None:
    assert client.post("/svc/js", content=b"x").status_code == 405


# --- conditional requests ---------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["identity", "gzip", "br"])
def test_if_none_match_gives_304(client: TestClient, encoding: str) -> None:
    first = client.get("/svc/js", headers={"Accept-Encoding": encoding})
    etag = first.headers["etag"]
    r = client.get("/svc/js", headers={"Accept-Encoding": encoding, "If-None-Match": etag})
    assert r.status_code == 304
    assert r.content == b""
    assert r.headers["etag"] == etag
    assert r.headers["cache-control"] == first.headers["cache-control"]
    assert r.headers["vary"] == "Accept-Encoding"
    # A list, a weak form of the same tag and * match too (weak comparison, RFC 9110).
    for inm in (f'"other", {etag}', f"W/{etag}", "*"):
        again = client.get("/svc/js", headers={"Accept-Encoding": encoding, "If-None-Match": inm})
        assert again.status_code == 304, inm


def test_a_stale_etag_gets_the_script(client: TestClient) -> None:
    r = client.get("/svc/js", headers={"Accept-Encoding": "identity", "If-None-Match": '"0ld"'})
    assert r.status_code == 200
    assert r.content == SCRIPT


def test_each_encoding_has_its_own_etag(client: TestClient) -> None:
    tags = {
        enc: client.get("/svc/js", headers={"Accept-Encoding": enc}).headers["etag"]
        for enc in ("identity", "gzip", "br")
    }
    assert len(set(tags.values())) == 3, tags
    # The gzip tag does not validate the brotli representation.
    r = client.get("/svc/js", headers={"Accept-Encoding": "br", "If-None-Match": tags["gzip"]})
    assert r.status_code == 200


# --- compression ------------------------------------------------------------------------------


def test_gzip(client: TestClient) -> None:
    r = client.get("/svc/js", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    # httpx decodes gzip transparently: the decoded content is the script.
    assert r.content == SCRIPT
    assert int(r.headers["content-length"]) < len(SCRIPT)
    assert int(r.headers["content-length"]) <= BUDGET_GZIPPED


def test_brotli(client: TestClient) -> None:
    with client.stream("GET", "/svc/js", headers={"Accept-Encoding": "br"}) as r:
        raw = b"".join(r.iter_raw())
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "br"
    assert int(r.headers["content-length"]) == len(raw) < len(SCRIPT)
    assert brotli.decompress(raw) == SCRIPT


def test_browser_accept_encoding_prefers_brotli(client: TestClient) -> None:
    with client.stream(
        "GET", "/svc/js", headers={"Accept-Encoding": "gzip, deflate, br, zstd"}
    ) as r:
        raw = b"".join(r.iter_raw())
    assert r.headers["content-encoding"] == "br"
    assert brotli.decompress(raw) == SCRIPT


def test_no_accept_encoding_gets_identity(client: TestClient) -> None:
    with client.stream("GET", "/svc/js", headers={"Accept-Encoding": ""}) as r:
        raw = b"".join(r.iter_raw())
    assert "content-encoding" not in r.headers
    assert raw == SCRIPT


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "identity"),
        ("", "identity"),
        ("identity", "identity"),
        ("gzip", "gzip"),
        ("x-gzip", "gzip"),
        ("br", "br"),
        ("gzip, deflate, br, zstd", "br"),
        ("br;q=0.5, gzip;q=0.9", "gzip"),
        ("br;q=0, gzip", "gzip"),
        ("br;q=0, gzip;q=0", "identity"),
        ("*", "br"),
        ("*;q=0.1, br;q=0", "gzip"),
        ("deflate", "identity"),
        ("identity;q=1, gzip;q=0.5", "identity"),
        ("gzip;q=bogus, br;q=2", "identity"),
        ("GZIP ; Q=0.8", "gzip"),
        ("*;q=0", "identity"),
    ],
)
def test_choose_encoding(header: str | None, expected: str) -> None:
    assert choose_encoding(header) == expected


# --- the extensions' builds (issue 20) ---------------------------------------------------------


def test_there_is_one_build_per_combination_and_no_other() -> None:
    assert len(COMBINATIONS) == 32
    built = {
        f.name for f in STATIC.iterdir() if f.name.startswith("svc") and f.name.endswith(".js")
    }
    assert built == {script_file(c).removeprefix("static/") for c in COMBINATIONS}


@pytest.mark.parametrize("extensions", COMBINATIONS, ids=lambda c: ",".join(c) or "default")
def test_every_combination_is_under_the_specification_limit(extensions: tuple[str, ...]) -> None:
    data = build(extensions)
    assert 0 < len(data) <= SPEC_LIMIT, f"{len(data)} bytes minified > {SPEC_LIMIT}"
    text = data.decode("utf-8")
    assert text.count("\n") <= 1 and "sourceMappingURL" not in text
    # The default build's wire contract is in every build.
    for needle in ("/analytics?key=", "page_view", "sendBeacon", "svc_ignore", "projectId"):
        assert needle in text, needle
    # Each build has the code of its extensions, and of no other.
    for name, marker in MARKERS.items():
        assert (marker in data) == (name in extensions), name


def test_each_extension_adds_to_the_default_build() -> None:
    """What each extension adds, minified and gzipped (the figures in tracker/README.md)."""
    base_gz = len(gzip.compress(SCRIPT, compresslevel=9, mtime=0))
    for name in EXTENSIONS:
        data = build((name,))
        assert len(data) > len(SCRIPT)
        assert len(gzip.compress(data, compresslevel=9, mtime=0)) > base_gz


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("engagement", ("engagement",)),
        ("outbound,engagement", ("engagement", "outbound")),
        ("vitals,404,vitals", ("404", "vitals")),
        ("404,downloads,engagement,outbound,vitals", EXTENSIONS),
    ],
)
def test_parse_extensions(path: str, expected: tuple[str, ...]) -> None:
    assert parse_extensions(path) == expected


def test_an_extended_build_is_served_like_the_default(client: TestClient) -> None:
    expected = build(("engagement", "outbound"))
    default = client.get("/svc/js", headers={"Accept-Encoding": "identity"})
    r = client.get("/svc/js/engagement,outbound", headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200
    assert r.content == expected
    for name in (
        "content-type",
        "cache-control",
        "vary",
        "access-control-allow-origin",
        "cross-origin-resource-policy",
        "x-content-type-options",
    ):
        assert r.headers[name] == default.headers[name], name
    assert r.headers["content-length"] == str(len(expected))
    assert "set-cookie" not in r.headers
    etag = r.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{16,}"', etag) and etag != default.headers["etag"]
    assert hashlib.sha256(expected).hexdigest().startswith(etag.strip('"'))
    # Any order, a repeated name: the same build, the same tag.
    again = client.get(
        "/svc/js/outbound,engagement,outbound", headers={"Accept-Encoding": "identity"}
    )
    assert again.content == expected and again.headers["etag"] == etag
    # HEAD, 304, and the compressed representations with their own tags.
    head = client.head("/svc/js/engagement,outbound", headers={"Accept-Encoding": "identity"})
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == etag
    for encoding in ("identity", "gzip", "br"):
        first = client.get("/svc/js/engagement,outbound", headers={"Accept-Encoding": encoding})
        tag = first.headers["etag"]
        r304 = client.get(
            "/svc/js/outbound,engagement",
            headers={"Accept-Encoding": encoding, "If-None-Match": tag},
        )
        assert r304.status_code == 304 and r304.content == b""
    with client.stream(
        "GET", "/svc/js/engagement,outbound", headers={"Accept-Encoding": "br"}
    ) as s:
        raw = b"".join(s.iter_raw())
    assert s.headers["content-encoding"] == "br"
    assert brotli.decompress(raw) == expected
    gz = client.get("/svc/js/engagement,outbound", headers={"Accept-Encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip" and gz.content == expected


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/svc/js/scroll", "`scroll`"),
        ("/svc/js/engagement,", "``"),
        ("/svc/js/Engagement", "`Engagement`"),
        ("/svc/js/engagement;outbound", "`engagement;outbound`"),
        ("/svc/js/svc.engagement.js", "`svc.engagement.js`"),
    ],
)
def test_an_unknown_extension_is_a_404_naming_it(client: TestClient, path: str, named: str) -> None:
    r = client.get(path)
    assert r.status_code == 404
    body = r.json()
    assert body["ok"] is False
    assert body["error"]["code"] == "not_found"
    assert body["error"]["field"] == "extensions"
    message = body["error"]["message"]
    assert named in message and "engagement, outbound" in message
