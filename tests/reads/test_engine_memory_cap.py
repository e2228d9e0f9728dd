"""The embedded engine's own memory is capped from the service's budget (issue 39): chDB takes
``max_server_memory_usage`` as a start-up option, a read that would take the engine past it
is refused as 503 ``busy`` naming the budget, and the engine goes on answering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from svc.settings import Settings
from svc.storage.handles import LEAST_ENGINE_CAP_MB, PYTHON_SHARE_MB, engine_memory_cap_mb
from tests.support import ROOT

MB = 1024 * 1024

SCRIPT = """
import json, sys
from pathlib import Path
from svc.errors import Busy
from svc.settings import Settings
from svc.storage.events import EventStore, Read

settings = Settings.from_env(
    data_dir=Path(sys.argv[1]), memory_limit_mb=int(sys.argv[2]), read_memory_limit_mb=0
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


def test_the_engine_is_capped_at_the_budget_less_the_python_sides_share() -> None:
    assert engine_memory_cap_mb(Settings()) == Settings().memory_limit_mb - PYTHON_SHARE_MB
    assert engine_memory_cap_mb(Settings(memory_limit_mb=200)) == LEAST_ENGINE_CAP_MB
    assert engine_memory_cap_mb(Settings(memory_limit_mb=0)) == 0  # no budget: ClickHouse's
    server = Settings(memory_limit_mb=768, clickhouse_url="http://localhost:8123")
    assert engine_memory_cap_mb(server) == 0  # a server's memory is its operator's


def test_a_read_past_the_engines_cap_is_busy_and_the_engine_goes_on(tmp_path: Path) -> None:
    budget = PYTHON_SHARE_MB + LEAST_ENGINE_CAP_MB
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
    assert code == "busy" and "SVC_MEMORY_LIMIT_MB" in message and retry, out
    assert out["after"] == 1000, out
