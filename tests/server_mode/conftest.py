"""Every test module here runs existing tests with svc in server mode (``SVC_CLICKHOUSE_URL``)
on the ClickHouse double (tests/clickhouse_double): one double per module, and every
``tests.support.Server`` the tests start on a database of its own there, the suite's one
server (``server``) included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clickhouse_double import RunningDouble, clickhouse_double, server_mode
from tests.support import Server

__all__ = ["clickhouse_double", "server_mode"]


@pytest.fixture(scope="module", autouse=True)
def _in_server_mode(server_mode: RunningDouble) -> Iterator[RunningDouble]:
    """Server mode for the module; after it, every statement svc sent parsed with
    ClickHouse's parser under the oldest server version the docs name (the double refused
    any that did not, so a test failed already; this says which)."""
    yield server_mode
    sent = server_mode.statements()
    assert sent, "svc sent the double nothing"
    refused = [s["sql"] for s in sent if s["parses"] is False]
    assert not refused, refused


@pytest.fixture(scope="module")
def server(
    server_mode: RunningDouble,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    """This module's one server, in server mode."""
    srv = Server(tmp_path_factory.mktemp("svc") / "data").start()
    yield srv
    srv.stop()
