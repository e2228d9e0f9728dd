"""svc.imports knows nothing of the command line, and svcm loads the import machinery only
when it imports (it registers the command at every start)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli.support import ROOT


def modules_after(code: str) -> set[str]:
    program = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    return set(json.loads(out.stdout))


def test_the_import_package_does_not_use_the_cli() -> None:
    loaded = modules_after("import svc.imports.store, svc.imports.sources, svc.imports.over_http")
    assert "svc.ingestion.pipeline" in loaded
    assert not {m for m in loaded if m.startswith("svc.cli")}


def test_svcm_starts_without_the_pipeline_or_the_store() -> None:
    loaded = modules_after("from svc.cli.main import build_parser; build_parser()")
    assert "svc.imports.sources" in loaded  # the readers: standard library only
    heavy = {"svc.imports.run", "svc.ingestion.pipeline", "svc.storage.events", "msgspec"}
    assert not heavy & loaded
