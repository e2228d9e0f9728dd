"""The embedded engine's own memory can be capped (issue 39, SVC_ENGINE_MEMORY_LIMIT_MB): chDB
takes ``max_server_memory_usage`` as a start-up option, a read that would take the engine past
it is refused as 503 ``busy`` naming the setting, and the engine goes on answering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from svc.settings import Settings
from svc.storage.handles import LEAST_ENGINE_CAP_MB, engine_memory_cap_mb
from tests.support import ROOT

MB = 1024 * 1024

SCRIPT = """
import json, sys
from pathlib import Path
from svc.errors import Busy
from svc.settings import Settings
from svc.storage.events import EventStore, Read

settings = Settings.from_env(
    data_dir=Path(sys.argv[1]), engine_memory_limit_mb=int(sys.argv[2]), read_memory_limit_mb=0
)
store = EventStore(settings)
cap = "SELECT value FROM system.server_settings WHERE name = 'max_server_memory_usage'"
out = {"cap": int(store.query(cap)[0][0])}
try:  # an array of 60M numbers: ~500 MB
    Read(timeout_s=60).run(store.query, "SELECT length(groupArray(number)) FROM numbers(60000000)")
    out["big"] = ["finished", ""]
except Busy as exc:
    out["big"] = [exc.code, str(exc), exc.headers.get("Retry-After")]
out["after"] = store.query("SELECT count() FROM numbers(1000)")[0][0]
print(json.dumps(out))
"""


def test_the_engine_is_capped_only_when_asked() -> None:
    assert engine_memory_cap_mb(Settings()) == 0  # ClickHouse's own: room for rebuilds
    assert engine_memory_cap_mb(Settings(engine_memory_limit_mb=576)) == 576
    assert engine_memory_cap_mb(Settings(engine_memory_limit_mb=50)) == LEAST_ENGINE_CAP_MB
    server = Settings(engine_memory_limit_mb=576, clickhouse_url="http://localhost:8123")
    assert engine_memory_cap_mb(server) == 0  # a server's memory is its operator's


def test_a_read_past_the_engines_cap_is_busy_and_the_engine_goes_on(tmp_path: Path) -> None:
    budget = LEAST_ENGINE_CAP_MB
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), str(budget)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["cap"] == LEAST_ENGINE_CAP_MB * MB, out
    code, message, retry = out["big"]
    assert code == "busy" and "SVC_ENGINE_MEMORY_LIMIT_MB" in message and retry, out
    assert out["after"] == 1000, out
