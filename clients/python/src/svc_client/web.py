"""Helpers for recording page views from a web server on behalf of its visitors.

A server-side page view carries the visitor's user agent and address (``user_agent=``, ``ip=``),
which the service honours with the project's *secret* key only. Behind a reverse proxy or a
load balancer, the visitor's address is in ``X-Forwarded-For``: :func:`client_ip` reads it the
way the service itself does, trusting only the proxies you name.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final

__all__ = ["DEFAULT_TRUSTED_PROXIES", "client_ip", "is_page_request", "is_trusted"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Loopback and private networks: where reverse proxies and load balancers usually are.
DEFAULT_TRUSTED_PROXIES: Final[tuple[str, ...]] = (
    "127.0.0.0/8",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "::1/128",
    "fc00::/7",
)


@lru_cache(maxsize=32)
def _networks(cidrs: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip())


def _address(text: str) -> str | None:
    """An IP address from a peer or forwarded hop: ``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``."""
    s = text.strip().strip('"')
    if s.startswith("[") and "]" in s:
        s = s[1 : s.index("]")]
    elif s.count(":") == 1:
        s = s.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(s))
    except ValueError:
        return None


def is_trusted(
    address: str | None, trusted_proxies: Sequence[str] = DEFAULT_TRUSTED_PROXIES
) -> bool:
    """Whether ``address`` is one of the trusted proxies (whose forwarded headers count)."""
    addr = _address(address) if address else None
    if addr is None:
        return False
    ip = ipaddress.ip_address(addr)
    return any(ip in net for net in _networks(tuple(trusted_proxies)))


def client_ip(
    peer: str | None,
    forwarded_for: str | Iterable[str] | None = None,
    *,
    trusted_proxies: Sequence[str] = DEFAULT_TRUSTED_PROXIES,
) -> str | None:
    """The visitor's IP address: ``peer`` (the address the connection came from), or, when the
    peer is a trusted proxy, the right-most ``X-Forwarded-For`` hop that is not a trusted proxy.

    ``forwarded_for`` is the header's value (or its values, when it came more than once).
    ``trusted_proxies`` are CIDRs (default: loopback and private networks); pass ``()`` to
    ignore ``X-Forwarded-For`` when the app faces the Internet directly. ``None`` when no
    valid address is known.
    """
    nets = _networks(tuple(trusted_proxies))

    def trusted(addr: str) -> bool:
        ip = ipaddress.ip_address(addr)
        return any(ip in net for net in nets)

    address = _address(peer) if peer else None
    if not nets or not forwarded_for or (address is not None and not trusted(address)):
        return address
    values = [forwarded_for] if isinstance(forwarded_for, str) else list(forwarded_for)
    hops = [h for value in values for h in value.split(",") if h.strip()]
    for hop in reversed(hops):
        addr = _address(hop)
        if addr is None:
            return address  # a forged or garbled hop: stop trusting the header here
        if not trusted(addr):
            return addr
    return address


#: Path prefixes and suffixes that are not pages.
_ASSET_SUFFIXES: Final = (
    ".css",
    ".js",
    ".mjs",
    ".map",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".ico",
    ".webp",
    ".avif",
    ".woff",
    ".woff2",
    ".ttf",
    ".txt",
    ".xml",
    ".json",
)


def is_page_request(method: str, path: str, status: int, content_type: str | None) -> bool:
    """Whether a request/response pair is a page view worth recording: a ``GET`` answered with
    a 2xx HTML page, not an asset."""
    if method.upper() != "GET" or not 200 <= status < 300:
        return False
    if path.lower().endswith(_ASSET_SUFFIXES):
        return False
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() in (
        "text/html",
        "application/xhtml+xml",
    )
