"""What keeps the suite safe when it runs in several processes (pytest-xdist, ``-n 3``) and
next to other runs on the same machine: loopback ports and a PostgreSQL database of one's own.

Contract for tests:

- A port for a server a test starts comes from :func:`free_port` (``tests.support`` re-exports
  it), or the server binds port 0 itself and says which port it got. Never a fixed port.
- PostgreSQL: ``SVC_TEST_PG_URL`` (read it through ``tests.test_meta_store.postgres_url``)
  names a database that this test process alone uses for the whole session; a test may drop
  and create schemas in it. A test that needs more databases derives their names from that
  one (``<name>_src``), so that two processes never share one.
- Files under ``tmp_path`` / ``tmp_path_factory`` only (each process has its own base).
"""

from __future__ import annotations

import os
import random
import socket
import zlib
from typing import Any

_BAND = (10_000, 32_000)  # ports handed out, when the kernel's own ephemeral range is above


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32_768, 60_999


def _worker() -> tuple[int, int]:
    """(index, count) of this pytest-xdist worker; (0, 1) when the run is not distributed."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0
    return index % max(count, 1), max(count, 1)


class _Ports:
    """Ports below the ephemeral range, so that neither the kernel (``bind(0)``, the source
    port of every outgoing connection) nor another worker of this run hands them out: each
    worker has a slice of the band of its own and walks it from a random start, skipping the
    ports somebody holds, never giving one twice. Other runs on the machine start elsewhere
    at random, and the bind check skips what their servers hold."""

    def __init__(self) -> None:
        self._pid = 0
        self._next = 0
        self._slice = (0, 0)

    def _reset(self) -> None:
        low, high = _BAND[0], min(_BAND[1], _ephemeral_range()[0])
        index, count = _worker()
        size = (high - low) // count
        self._slice = (low + index * size, low + (index + 1) * size)
        self._next = random.SystemRandom().randrange(*self._slice) if size > 0 else 0
        self._pid = os.getpid()

    def take(self) -> int:
        if self._pid != os.getpid():
            self._reset()
        low, high = self._slice
        for _ in range(max(high - low, 0)):
            port = self._next
            self._next = low + (self._next + 1 - low) % (high - low)
            if _bindable(port):
                return port
        return _kernel_port()  # no band below the ephemeral range on this machine


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PORTS = _Ports()


def free_port() -> int:
    """A loopback port nobody listens on now, and that no other test of this run is given."""
    return _PORTS.take()


# --- PostgreSQL: a database per test process -------------------------------------------------

_SLOTS = 64


class PostgresSlot:
    """Holds one of the databases ``<base>_p<k>`` (created once, kept between runs) for this
    process: a session-level advisory lock on a connection kept open says it is taken, and
    the server frees it when the process ends, however it ends."""

    def __init__(self, base_url: str) -> None:
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        url = make_url(base_url)
        admin = url.set(database="postgres")
        self._engine = create_engine(
            admin, isolation_level="AUTOCOMMIT", poolclass=_null_pool(), connect_args=_timeout()
        )
        self._conn: Any = self._engine.connect()
        base = url.database or "svc_test"
        for k in range(_SLOTS):
            name = f"{base}_p{k}"
            key = zlib.crc32(name.encode())
            if self._conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
                exists = self._conn.execute(
                    text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
                ).scalar()
                if not exists:
                    self._conn.execute(text(f'CREATE DATABASE "{name}"'))
                self.url = url.set(database=name).render_as_string(hide_password=False)
                return
        self.close()
        raise RuntimeError(f"all {_SLOTS} test databases of {base} are taken")

    def close(self) -> None:
        self._conn.close()
        self._engine.dispose()


def _null_pool() -> Any:
    from sqlalchemy.pool import NullPool

    return NullPool


def _timeout() -> dict[str, int]:
    return {"connect_timeout": 10}
