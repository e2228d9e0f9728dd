"""What the import round trips share: the counts per dimension of projects of a data directory
(:mod:`tests.imports.reports`, in a process of its own), and ``svcm import`` on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import ROOT


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "SVCM_"))}
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    return env


def counts(
    data_dir: Path, projects: list[str], first: str, last: str, tz: str = "UTC"
) -> dict[str, Any]:
    """Per project: /metrics of the range and every breakdown's rows, value by value."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.imports.reports", str(data_dir), first, last, tz,
         *projects],
        cwd=str(ROOT), env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def direct(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``svcm <args> --data-dir <data_dir> --json`` (the service stopped)."""
    return subprocess.run(
        [sys.executable, "-m", "svc", *args, "--data-dir", str(data_dir), "--json"],
        cwd=str(ROOT), env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def import_direct(data_dir: Path, project: str, *files: str, fmt: str = "auto") -> dict[str, Any]:
    """``svcm import`` of ``files`` into ``project`` on the data directory: its summary."""
    done = direct(data_dir, "import", "-p", project, "--format", fmt, *files)
    assert done.returncode == 0, done.stderr + done.stdout
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def project(data_dir: Path, name: str, tz: str = "UTC", *domains: str) -> str:
    """A new project on the data directory: its id."""
    args = ["projects", "create", name, "--timezone", tz]
    for d in domains:
        args += ["--domain", d]
    done = direct(data_dir, *args)
    assert done.returncode == 0, done.stderr
    pid: str = json.loads(done.stdout)["id"]
    return pid
