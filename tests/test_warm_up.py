"""``SVC_WARM_UP``: the geo data and the user-agent rules are loaded while the server starts
(the default), or by the first event that needs them (false; what the suite's servers do)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_START = """
import asyncio, json, sys
from pathlib import Path
from svc.ingestion.enrich import geo, useragent
from svc.runtime import Runtime
from svc.settings import Settings

async def main():
    runtime = Runtime(Settings(data_dir=Path(sys.argv[1]), warm_up=sys.argv[2] == "true"))
    await runtime.start()
    loaded = {"geo": geo._database is not None, "user_agents": useragent._resolver is not None}
    await runtime.stop()
    print(json.dumps(loaded))

asyncio.run(main())
"""


@pytest.mark.parametrize("warm_up", [True, False])
def test_start_loads_the_enrichment_data_only_when_told(tmp_path: Path, warm_up: bool) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _START, str(tmp_path / "data"), str(warm_up).lower()],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == {"geo": warm_up, "user_agents": warm_up}
