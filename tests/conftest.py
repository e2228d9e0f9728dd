"""Fixtures shared by every test: the real service on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import BROWSER_UA, Server

__all__ = ["BROWSER_UA"]  # many tests import it from here


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
