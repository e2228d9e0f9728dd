"""Fixtures of the edge tests: one origin with an edge secret, and each platform's edge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.edge.support import METRICS_TOKEN, SECRET, Edge, built, require_runtimes, start
from tests.support import Server


@pytest.fixture(scope="session")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An origin that trusts SECRET, with a small per-address ingestion limit (5 a minute) so
    that the tests can see which address it counts, and /internal/metrics (METRICS_TOKEN)."""
    srv = Server(
        tmp_path_factory.mktemp("edge-origin") / "data",
        env={
            "SVC_EDGE_SECRET": SECRET,
            "SVC_RATE_LIMIT_INGEST_PER_IP": "5/m:5",
            "SVC_INTERNAL_METRICS_TOKEN": METRICS_TOKEN,
        },
    ).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def edge_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("edges")


@pytest.fixture(scope="module", params=["cloudflare-workers", "vercel-edge", "lambda-edge", "bun"])
def edge(request: pytest.FixtureRequest, origin: Server, edge_tmp: Path) -> Iterator[Edge]:
    """The edge of one platform in front of the origin (the script kept 1 s)."""
    require_runtimes()
    platform: str = request.param
    config = {
        "SVC_ORIGIN": origin.url,
        "SVC_EDGE_SECRET": SECRET,
        "SVC_SCRIPT_TTL_SECONDS": "1",
        "SVC_EDGE_TRUSTED_PROXIES": "127.0.0.1/32",
    }
    running = start(platform, built(platform, edge_tmp, config), edge_tmp, config)
    yield running
    running.stop()
