"""Running the real ``svcm`` in a subprocess, with an environment of the test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    args: tuple[str, ...]
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def ok(self) -> Result:
        assert self.status == 0, f"svcm {' '.join(self.args)} -> {self.status}\n{self.stderr}"
        return self

    def fails(self, status: int, *fragments: str) -> Result:
        """Failed with ``status``: one line on stderr (no traceback) holding ``fragments``."""
        assert self.status == status, (
            f"svcm {' '.join(self.args)} -> {self.status}, wanted {status}\n{self.stderr}"
        )
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert "Traceback" not in self.stderr, self.stderr
        assert len(lines) >= 1 and lines[-1].startswith("svcm"), self.stderr
        for fragment in fragments:
            assert fragment in self.stderr, f"{fragment!r} not in {self.stderr!r}"
        return self


def clean_env(config: Path, **extra: str) -> dict[str, str]:
    """The process environment without svc settings, with a config file of the test's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SVC_", "SVCM_")) and k not in ("COLUMNS", "NO_COLOR")
    }
    env["SVC_CONFIG"] = str(config)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.update(extra)
    return env


def svcm(
    *args: str,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = 120,
) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "svc", *args],
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(ROOT),
    )
    return Result(tuple(args), proc.returncode, proc.stdout, proc.stderr)


def parallel(*calls: Callable[[], Result]) -> list[Result]:
    """Run independent svcm calls at the same time (each is its own process)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda call: call(), calls))


def unique(prefix: str = "cli") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
