"""The signature of an edge's headers (docs/edge.md; the format in svc.http.edge_auth's
docstring): the lines an edge signs, and their check against the secrets it may sign with."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import time
from dataclasses import dataclass
from typing import Final

from svc.http.edge_keyring import EdgeSecrets
from svc.ingestion.enrich.geo import Geo, geo_from_headers

__all__ = ["MAX_NONCE", "VERSION", "WINDOW_SECONDS", "EdgeVisitor", "sign", "verify"]

#: How far the signature's time may be from the origin's clock (s), either way.
WINDOW_SECONDS: Final = 120
VERSION: Final = "v1"
_PREFIX: Final = b"x-svc-edge-"
#: The longest nonce taken (the edge sends 32 hex digits).
MAX_NONCE: Final = 128


@dataclass(frozen=True, slots=True)
class EdgeVisitor:
    """What a verified request says of its visitor."""

    address: str
    geo: Geo | None  # None: no country from the edge (the origin locates the address)
    scope: frozenset[str] | None = None  # the projects its secret may sign for; None: all
    signature: bytes = b""  # the request's verified signature (what a replay repeats)
    ts: int = 0  # its signed time, Unix seconds


def sign(
    secret: bytes,
    *,
    kid: str,
    ts: str,
    method: str,
    target: str,
    body_sha256: str,
    authorization: str,
    user_agent: str,
    fields: tuple[str, str, str, str],
    nonce: str = "",
) -> str:
    """The hex signature of a request (the edge's ``edge/src/sign.ts``, in Python); the nonce
    is the last line when there is one."""
    lines = [
        f"svc-edge-{VERSION}",
        kid,
        ts,
        method.upper(),
        target,
        body_sha256,
        authorization,
        user_agent,
        *fields,
    ]
    if nonce:
        lines.append(nonce)
    text = "\n".join(lines)
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _address(value: str) -> str | None:
    try:
        ip = ipaddress.ip_address(value.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def verify(
    secrets: EdgeSecrets,
    *,
    method: str,
    target: str,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    now: float | None = None,
) -> EdgeVisitor | None:
    """The visitor a request's edge headers name, or None unless they verify."""
    edge: dict[bytes, str] = {}
    authorization = user_agent = ""
    for name, value in headers:
        if name.startswith(_PREFIX):
            edge.setdefault(name[len(_PREFIX) :], value.decode("latin-1"))
        elif name == b"authorization" and not authorization:
            authorization = value.decode("latin-1")
        elif name == b"user-agent" and not user_agent:
            user_agent = value.decode("latin-1")
    version, _, signature = edge.get(b"signature", "").partition("=")
    ts = edge.get(b"ts", "")
    nonce = edge.get(b"nonce", "")
    if version != VERSION or not signature or not ts.isdigit() or len(ts) > 12:
        return None
    if len(nonce) > MAX_NONCE:
        return None
    if abs((time.time() if now is None else now) - int(ts)) > WINDOW_SECONDS:
        return None
    kid = edge.get(b"kid", "")
    keys = secrets.candidates(kid)
    if not keys:
        return None
    fields = (
        edge.get(b"ip", ""),
        edge.get(b"country", ""),
        edge.get(b"region", ""),
        edge.get(b"city", ""),
    )
    digest = hashlib.sha256(body).hexdigest()
    matched = False
    scopes: list[frozenset[str] | None] = []
    for key, scope in keys:  # every key is tried: the time taken does not tell which matched
        expected = sign(
            key,
            kid=kid,
            ts=ts,
            method=method,
            target=target,
            body_sha256=digest,
            authorization=authorization,
            user_agent=user_agent,
            fields=fields,
            nonce=nonce,
        )
        if hmac.compare_digest(expected, signature):
            matched = True
            scopes.append(scope)
    if not matched:
        return None
    address = _address(fields[0])
    if address is None:
        return None
    geo = None
    if fields[1]:
        geo = geo_from_headers(
            {"cf-ipcountry": fields[1], "cf-region-code": fields[2], "cf-ipcity": fields[3]}
        )
    allowed = (
        None
        if any(scope is None for scope in scopes)
        else frozenset().union(*(s for s in scopes if s is not None))
    )
    return EdgeVisitor(address, geo, allowed, bytes.fromhex(signature), int(ts))
