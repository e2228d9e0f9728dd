"""The helpers for recording page views from a web server (svc_client.web)."""

from __future__ import annotations

from typing import Any

import pytest

from svc_client.web import client_ip, is_page_request, is_trusted


@pytest.mark.parametrize(
    "peer,forwarded,expected",
    [
        ("203.0.113.5", None, "203.0.113.5"),
        ("203.0.113.5", "8.8.8.8", "203.0.113.5"),  # an untrusted peer cannot forward
        ("127.0.0.1", "8.8.8.8", "8.8.8.8"),
        ("10.0.0.2", "1.1.1.1, 8.8.8.8, 10.0.0.7", "8.8.8.8"),  # right-most untrusted hop
        ("10.0.0.2", ["1.1.1.1", "8.8.8.8"], "8.8.8.8"),  # the header sent twice
        ("10.0.0.2", "10.0.0.9", "10.0.0.2"),  # only proxies: the peer
        ("10.0.0.2", "garbage, 8.8.8.8", "8.8.8.8"),
        ("10.0.0.2", "8.8.8.8, garbage", "10.0.0.2"),  # stop at a forged hop
        ("::1", "2001:4860:4860::8888", "2001:4860:4860::8888"),
        ("127.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),
        ("127.0.0.1", "8.8.4.4:5000", "8.8.4.4"),
        (None, None, None),
        ("not-an-ip", None, None),
    ],
)
def test_client_ip(peer: str | None, forwarded: Any, expected: str | None) -> None:
    assert client_ip(peer, forwarded) == expected


def test_client_ip_with_no_trusted_proxies_ignores_the_header() -> None:
    assert client_ip("127.0.0.1", "8.8.8.8", trusted_proxies=()) == "127.0.0.1"
    assert client_ip("192.0.2.1", "8.8.8.8", trusted_proxies=["192.0.2.0/24"]) == "8.8.8.8"
    assert is_trusted("10.1.2.3") and is_trusted("[::1]:80") and not is_trusted("8.8.8.8")
    assert not is_trusted(None) and not is_trusted("nope")


def test_is_page_request() -> None:
    assert is_page_request("GET", "/pricing", 200, "text/html; charset=utf-8")
    assert not is_page_request("POST", "/pricing", 200, "text/html")
    assert not is_page_request("GET", "/pricing", 404, "text/html")
    assert not is_page_request("GET", "/pricing", 302, "text/html")
    assert not is_page_request("GET", "/api/items", 200, "application/json")
    assert not is_page_request("GET", "/app.js", 200, "text/html")
    assert not is_page_request("GET", "/x", 200, None)
