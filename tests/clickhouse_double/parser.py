"""ClickHouse's own parser of the oldest server version svc supports, in a process of its own.

``make test-deps`` installs chdb-core 26.3.0 (ClickHouse 26.3's engine) into
``.stamps/clickhouse-26.3`` (a version of chDB other than the one svc runs: it cannot share
the virtual environment). :class:`OldestParser` runs a Python process with only that
directory in front of its path and asks it, for each statement, ``SELECT formatQuery(...)``:
ClickHouse 26.3's parser itself, not a newer parser under a ``compatibility`` setting. Where
the directory is missing the double falls back to its own engine's parser (and says so in
``statements.log``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Where ``make test-deps`` puts chdb-core 26.3.0 (see the module's docstring).
DEFAULT_DIR = ROOT / ".stamps" / "clickhouse-26.3"

#: The parsing process: a JSON line in ({"sql": ...}), a JSON line out ({"error": ...}).
_PROGRAM = r"""
import json, sys
import chdb
conn = chdb.connect(":memory:")
version = conn.query("SELECT version()", "TabSeparated").bytes().decode().strip()
print(json.dumps({"version": version}), flush=True)
for line in sys.stdin:
    sql = json.loads(line)["sql"]
    literal = "'" + sql.replace("\\", "\\\\").replace("'", "\\'") + "'"
    try:
        conn.query("SELECT formatQuery(" + literal + ")", "TabSeparated")
        print(json.dumps({"error": ""}), flush=True)
    except Exception as exc:
        print(json.dumps({"error": str(exc) or "refused"}), flush=True)
"""


class OldestParser:
    """ClickHouse's parser from ``directory`` (one statement at a time, behind a lock)."""

    def __init__(self, directory: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(directory)}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _PROGRAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout
        first = self._out.readline()
        if not first:
            raise RuntimeError(f"the parser in {directory} did not start")
        self.version: str = json.loads(first)["version"]
        self._lock = threading.Lock()

    def error(self, sql: str) -> str:
        """Why the parser refuses ``sql`` ("" if it takes it)."""
        with self._lock:
            self._in.write(json.dumps({"sql": sql}) + "\n")
            self._in.flush()
            error: str = json.loads(self._out.readline())["error"]
        return error

    def close(self) -> None:
        self._in.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def oldest_parser(directory: Path | None) -> OldestParser | None:
    """The parser in ``directory`` (default :data:`DEFAULT_DIR`), None if it is not there."""
    directory = directory or DEFAULT_DIR
    if not (directory / "chdb" / "__init__.py").exists():
        return None
    return OldestParser(directory)
