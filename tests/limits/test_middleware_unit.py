"""The middleware's small parts: which routes are limited, and how addresses are keyed."""

from __future__ import annotations

import pytest

from svc.http.limits import INGEST, MANAGE, READ, _bearer, address_key, classify


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("POST", "/analytics", INGEST),
        ("OPTIONS", "/analytics", 0),
        ("GET", "/metrics", READ),
        ("GET", "/metrics/breakdown", READ),
        ("GET", "/export", READ),
        ("GET", "/projects", MANAGE),
        ("PATCH", "/projects/svc_proj_a", MANAGE),
        ("POST", "/projects/svc_proj_a/keys", MANAGE),
        ("GET", "/health", 0),
        ("GET", "/svc/js", 0),
        ("GET", "/openapi.json", 0),
    ],
)
def test_classify(method: str, path: str, kind: int) -> None:
    assert classify(method, path) == kind


def test_ipv6_addresses_are_limited_by_their_64() -> None:
    assert address_key("2001:db8:1:2:3:4:5:6") == address_key("2001:db8:1:2::9")
    assert address_key("2001:db8:1:3::9") != address_key("2001:db8:1:2::9")
    assert address_key("::ffff:192.0.2.1") == "192.0.2.1"


def test_bearer() -> None:
    assert _bearer(b"Bearer svc_live_x") == "svc_live_x"
    assert _bearer(b"bearer  svc_live_x ") == "svc_live_x"
    assert _bearer(b"Basic abc") is None
    assert _bearer(b"Bearer " + b"x" * 1000) is None
