"""The server process loads what it uses: no data-frame libraries (pandas, pyarrow, numpy),
no single sign-on client unless it signs someone in.

clickhouse-connect and chDB import them when they are installed (they are, as chDB's
dependencies); svc hands the store rows, bytes and text only, and keeping them out saves
~80 MB of the 600 MB budget (docs/benchmarks.md, Memory).
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from svc.settings import Settings
from svc.storage.events import HEAVY_READ_S, READS_IDLE_S, EventStore
from tests.support import Server

DATA_FRAME_LIBRARIES = ("pandas", "pyarrow", "numpy")


def _mapped_files(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split()[-1] for line in maps if "/" in line}


def test_the_server_loads_no_data_frame_library(server: Server) -> None:
    project = server.create_project("footprint")
    secret = project["keys"]["secret"]
    event = {"event": "page_view", "url": "https://footprint.test/a"}
    assert (
        server.send(secret, [event, {**event, "url": "https://footprint.test/b"}]).json()[
            "accepted"
        ]
        == 2
    )
    server.wait_loaded()
    today = datetime.now(UTC).date().isoformat()
    assert server.metrics(secret, **{"from": today, "to": today})["pageviews"] == 2
    parquet = httpx.get(
        server.url + "/export",
        params={"from": today, "format": "parquet"},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=60,
    )
    assert parquet.status_code == 200 and parquet.content[:4] == b"PAR1"
    assert server.proc is not None
    loaded = [
        path
        for path in _mapped_files(server.proc.pid)
        if any(f"site-packages/{name}/" in path for name in DATA_FRAME_LIBRARIES)
    ]
    assert loaded == []
    # nor single sign-on's (Authlib's cryptography): imported by the first sign-on only
    mapped = _mapped_files(server.proc.pid)
    assert not [path for path in mapped if "site-packages/cryptography/" in path]
    # The export is a Parquet file that pyarrow (in this process) reads back.
    import pyarrow.parquet as pq

    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == 2


_STORE_ROUND_TRIP = """
import sys, tempfile
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings.from_env(data_dir=Path(tempfile.mkdtemp())))
assert store.migrate()  # inserts the applied versions
assert store.query("SELECT count() FROM svc_migrations")[0][0] > 0
store.close()
print(",".join(n for n in ("pandas", "pyarrow", "numpy") if n in sys.modules))
"""


def test_the_store_inserts_and_reads_without_data_frame_libraries() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _STORE_ROUND_TRIP], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1:] in ([], [""])


_ALLOCATOR = """
import os, sys, tempfile
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
os.environ.pop("JE_MALLOC_CONF", None)
store = EventStore(Settings.from_env(data_dir=Path(tempfile.mkdtemp())))
stats = store.query("SELECT * FROM system.jemalloc_stats")[0][0]
store.close()
print([line.strip() for line in stats.splitlines() if "opt.dirty_decay_ms" in line][0])
"""


def test_the_embedded_engine_hands_freed_pages_back_after_a_second() -> None:
    """ClickHouse's allocator keeps freed pages 5 s; the store asks for 1 s (jemalloc's
    JE_MALLOC_CONF, read as chDB loads: EMBEDDED_ALLOCATOR_CONF)."""
    out = subprocess.run(
        [sys.executable, "-c", _ALLOCATOR], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1].startswith("opt.dirty_decay_ms: 1000"), out.stdout


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_memory_a_heavy_read_freed_is_handed_back_at_the_pause(tmp_path: Path) -> None:
    """The embedded engine's allocator keeps what a big read freed; the store hands it back
    once reads pause (EventStore.release_memory_after_read)."""
    store = EventStore(Settings(data_dir=tmp_path / "data"))
    try:
        store.query("SELECT 1")
        before = _rss_mb()
        store.query("SELECT uniqExact(number) FROM numbers(30000000)")
        held = _rss_mb()
        assert held - before > 200  # the sets of 30M numbers, freed but kept
        store.release_memory_after_read(HEAVY_READ_S)
        store.release_memory_after_read(HEAVY_READ_S)  # one release for the burst
        time.sleep(READS_IDLE_S + 1.0)
        # (left alone, the allocator gives back ~15 % of it a second: 827 -> 716 MB in 1.5 s)
        assert _rss_mb() < before + 100
        assert store.query("SELECT 2") == [(2,)]  # and it goes on
    finally:
        store.close()
