"""The HTTP server of ``svcm serve``: uvicorn's httptools protocol, in three layers.

* :mod:`~svc.http.server.deadlines`: :class:`SlowClientProtocol`, the deadlines for slow
  clients (the rule: :mod:`svc.limits.timeouts`);
* :mod:`~svc.http.server.json_errors`: :class:`JsonErrorProtocol`, whose own answers (a
  request the parser refuses, a head past ``SVC_MAX_HEADER_BYTES``, an application that fails
  before answering) are CONTRACT's JSON errors, for every route;
* :mod:`~svc.http.server.fast_path`: :class:`AnalyticsProtocol`, the HTTP server's fast path
  for POST /analytics: it recognises the request in the parser's callbacks and calls the
  application without uvicorn's ASGI request cycle, and answers in one write.

The server handles no request itself: every request, POST /analytics by the fast path too,
goes to the one ASGI application of ``svcm serve`` (:mod:`svc.cli.serve`: signed edge
headers, the limits, :class:`svc.http.analytics.AnalyticsFastPath`, Starlette). POST
/analytics therefore has one handler, :func:`svc.http.analytics.handle`, whichever way it
comes in: this protocol, the raw ASGI fast path, or the Starlette route.

These classes subclass uvicorn's ``HttpToolsProtocol`` and use names uvicorn does not publish
(its parser callbacks and connection attributes, ``STATUS_LINE``, ``HEADER_RE``,
``HIGH_WATER_LIMIT``): ``tests/test_http_protocol.py`` checks that the same requests give the
same bytes with the fast path on and off, and ``tests/test_protocol_errors.py`` the JSON
errors; run them when uvicorn changes.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from svc.http.server.deadlines import SlowClientProtocol
from svc.http.server.fast_path import AnalyticsProtocol, Exchange
from svc.http.server.json_errors import JsonErrorProtocol
from svc.limits.timeouts import Deadlines
from svc.settings import Settings

__all__ = [
    "AnalyticsProtocol",
    "Exchange",
    "JsonErrorProtocol",
    "SlowClientProtocol",
    "analytics_protocol",
    "json_error_protocol",
]


def analytics_protocol(settings: Settings) -> type[HttpToolsProtocol]:
    """The protocol class of ``svcm serve`` when POST /analytics is answered in the
    protocol: with the settings' client deadlines and bound on request heads."""
    return _configured(AnalyticsProtocol, settings)


def json_error_protocol(settings: Settings) -> type[HttpToolsProtocol]:
    """The protocol class of ``svcm serve`` when POST /analytics goes through uvicorn's ASGI
    layer: the same deadlines, bound on heads and JSON errors, without the fast path."""
    return _configured(JsonErrorProtocol, settings)


def _configured(base: type[JsonErrorProtocol], settings: Settings) -> type[HttpToolsProtocol]:
    deadlines = Deadlines.from_settings(settings)
    return type(
        base.__name__,
        (base,),
        {
            "header_timeout": deadlines.header_seconds,
            "body_timeout": deadlines.body_seconds,
            "max_header_bytes": int(settings.max_header_bytes),
        },
    )
