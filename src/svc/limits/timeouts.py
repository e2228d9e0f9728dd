"""Deadlines for slow clients: the rule, and what it cut off.

A client that opens a connection and sends its headers or body a byte at a time would hold a
connection (and a request task) for as long as it likes. A request has
``SVC_CLIENT_HEADER_TIMEOUT_SECONDS`` from its first byte (or from the connection's opening) to
finish its headers and ``SVC_CLIENT_BODY_TIMEOUT_SECONDS`` after that to finish its body (0:
no deadline); past either, the client gets 408 ``request_timeout`` when it had started a
request and no answer has begun, and the connection is closed.

The HTTP server enforces them (:mod:`svc.http.server.deadlines`) and counts the connections it
cut off in :data:`COUNTS`, by phase (``headers``, ``body``): /health's
``limits.clientTimeouts``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from svc.settings import Settings

#: connections cut off for being slow, by phase (``headers``, ``body``)
COUNTS: Counter[str] = Counter()


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Seconds a request has for its headers, then for its body (0: no deadline)."""

    header_seconds: float
    body_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> Deadlines:
        return cls(
            float(settings.client_header_timeout_seconds),
            float(settings.client_body_timeout_seconds),
        )
