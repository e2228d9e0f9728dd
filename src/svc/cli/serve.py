"""``svcm serve``: run the service with uvicorn."""

from __future__ import annotations

import argparse
import gc
import socket
import sys
from typing import Any

from svc.settings import Settings

#: How long a thread holds the interpreter before another that waits for it takes it (s;
#: Python's default 0.005). The event loop, which answers ingestion and /health, waits for
#: the interpreter behind the read threads shaping their rows; a shorter turn brings it back
#: sooner (docs/benchmarks.md, Many tenants).
SWITCH_INTERVAL_S = 0.001


def run(settings: Settings) -> int:
    import uvicorn

    sys.setswitchinterval(SWITCH_INTERVAL_S)

    from svc.app import create_app
    from svc.http.analytics import with_fast_path
    from svc.http.edge_auth import with_edge_auth
    from svc.http.limits import with_limits
    from svc.http.logs import configure
    from svc.http.observe import observe

    try:
        configure(settings)  # JSON lines unless stderr is a terminal (svc.http.logs)
        starlette_app = create_app(settings)
    except ValueError as exc:  # a setting that cannot be used
        print(f"svcm: {exc}", file=sys.stderr)
        return 2
    # POST /analytics is answered before Starlette's stack (see svc.http.analytics).
    fast = with_fast_path(starlette_app)
    # limits first (svc.limits), and before them signed edge headers (svc.http.edge_auth);
    # outermost, each request's id and figures (svc.http.observe)
    app = observe(with_edge_auth(with_limits(fast), settings), starlette_app)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's lines go through svc's handler (svc.http.logs)
        access_log=False,
        server_header=False,
        date_header=True,
        loop="uvloop",
        http=protocol_class(settings, fast),
        lifespan="on",
        # svc decides the client address itself (SVC_TRUSTED_PROXIES); uvicorn's own
        # X-Forwarded-For handling would trust loopback peers behind its back.
        proxy_headers=False,
        timeout_keep_alive=30,
        limit_concurrency=10_000,
        backlog=4096,
    )
    server = _server_class(uvicorn.Server)(config)
    server.run()
    return 0


def protocol_class(settings: Settings, fast: Any) -> type[Any]:
    """The HTTP server's protocol (svc.http.server): uvicorn's httptools protocol with
    deadlines for slow clients and JSON errors and, unless switched off
    (``SVC_FAST_INGEST_PROTOCOL``) or the ASGI fast path stepped aside, POST /analytics
    answered inside it, ahead of uvicorn's ASGI layer (it calls the same application, so the
    same limits and handler)."""
    from svc.http.analytics import AnalyticsFastPath
    from svc.http.server import analytics_protocol, json_error_protocol

    if settings.fast_ingest_protocol and isinstance(fast, AnalyticsFastPath):
        return analytics_protocol(settings)
    return json_error_protocol(settings)  # the deadlines, the bound on heads, JSON errors


def _server_class(base: Any) -> Any:
    class Server(base):  # type: ignore[misc, valid-type]
        """uvicorn's server, which freezes the start-up heap once the application is up.

        Start-up leaves well over 100,000 long-lived objects (enrichment rules and data, the
        stores' clients, every module); each full collection walked them all and stopped the
        event loop every few seconds under load: the slowest requests. ``gc.freeze()`` moves
        them out of the collector's way (docs/benchmarks.md, Figures behind the code)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            gc.collect()
            gc.freeze()

    return Server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (``--data-dir``, ``--port``, ...), defaulting to the environment."""
    import dataclasses

    from svc.settings import flag_name

    for f in dataclasses.fields(Settings):
        kwargs: dict[str, object] = {"dest": f.name, "default": None, "help": f.metadata["help"]}
        if f.type in ("bool", bool):
            kwargs["choices"] = ["true", "false"]
        parser.add_argument(flag_name(f.name), **kwargs)  # type: ignore[arg-type]
