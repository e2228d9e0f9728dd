"""Fixtures shared by every test: the real service on a loopback port."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.parallel import PostgresSlot
from tests.support import BROWSER_UA, CHEAP_HASHES, Server

__all__ = ["BROWSER_UA"]  # many tests import it from here

_PG_SLOT: list[PostgresSlot] = []

#: One TLS context for every request the tests make with httpx's functions (httpx.get, ...):
#: each call builds a client, and each client loaded the CA bundle anew (54 ms of CPU a
#: request, against 0.24 ms with this one; 35 of the 36 s the test process of
#: tests/test_long_sessions.py spent on its 640 requests). Loopback HTTP needs none of it.
_TLS = httpx.create_ssl_context()


def _with_shared_tls(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def shared(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("verify", _TLS)
        return call(*args, **kwargs)

    return shared


for _name in ("request", "stream", "get", "options", "head", "post", "put", "patch", "delete"):
    setattr(httpx, _name, _with_shared_tls(getattr(httpx, _name)))


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


#: Seconds each test file took in a measured run of the whole suite (``make test``'s junit
#: durations summed per file, written by ``scripts/update_durations.py``; refreshed when files
#: grow, a stale figure only costs order).
_DURATIONS = Path(__file__).with_name("durations.json")


def _estimate(seconds: dict[str, float], file: str) -> float:
    """The measured seconds of ``file``; for a file not measured yet, the mean of the measured
    files of its folder (of every file when its folder has none). A new file counted as 0 s
    went last, and a long one (a browser test's) kept one process busy alone at the end."""
    if file in seconds:
        return seconds[file]
    folder = file.rpartition("/")[0]
    near = [s for f, s in seconds.items() if f.rpartition("/")[0] == folder] or [*seconds.values()]
    return sum(near) / len(near) if near else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest test files first, each whole and in its own order: pytest-xdist hands a
    file to whichever of its processes is free, and a long file started last kept one
    of them busy for minutes after the other had finished."""
    if not _DURATIONS.exists():
        return
    seconds: dict[str, float] = json.loads(_DURATIONS.read_text())
    root = Path(str(config.rootpath))
    files = {Path(str(item.path)).relative_to(root).as_posix() for item in items}
    cost = {f: -_estimate(seconds, f) for f in files}
    # stable: each file's items stay together and in order
    items.sort(key=lambda item: cost[Path(str(item.path)).relative_to(root).as_posix()])


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _PG_SLOT:
        _PG_SLOT.pop().close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real server for the session; tests isolate themselves by project. Its accounts'
    passwords are hashed at a hundredth of the default cost (tests.support.CHEAP_HASHES: the
    same code), as the servers of tests/accounts and tests/security hash them."""
    srv = Server(tmp_path_factory.mktemp("svc") / "data", env=dict(CHEAP_HASHES)).start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    """A server of one's own, for tests that stop, kill or reconfigure it."""
    srv = Server(tmp_path / "data")
    yield srv
    srv.stop()
