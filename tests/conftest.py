"""Fixtures shared by every test: the real service on a loopback port."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.parallel import PostgresSlot
from tests.support import BROWSER_UA, Server

__all__ = ["BROWSER_UA"]  # many tests import it from here

_PG_SLOT: list[PostgresSlot] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Each process that runs tests gets a PostgreSQL database of its own (tests/parallel.py):
    ``SVC_TEST_PG_URL`` is pointed at it for the session (and the servers tests start)."""
    if session.config.pluginmanager.has_plugin("dsession"):
        return  # the pytest-xdist controller runs no test
    base = os.environ.get("SVC_TEST_PG_URL")
    if not base:
        return
    try:
        slot = PostgresSlot(base)
    except Exception as e:  # no server: the PostgreSQL tests say so themselves
        print(f"tests/conftest.py: no database of our own on {base}: {e}")
        return
    _PG_SLOT.append(slot)
    os.environ["SVC_TEST_PG_URL"] = slot.url


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _PG_SLOT:
        _PG_SLOT.pop().close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real server for the session; tests isolate themselves by project."""
    srv = Server(tmp_path_factory.mktemp("svc") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    """A server of one's own, for tests that stop, kill or reconfigure it."""
    srv = Server(tmp_path / "data")
    yield srv
    srv.stop()
