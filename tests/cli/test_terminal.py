"""On a terminal svcm draws tables with rich; the same command piped prints plain lines."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Svcm
from tests.cli.support import ROOT, clean_env, unique
from tests.support import Server

ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run svcm with stdout and stderr on a pseudo-terminal; (status, what it showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120"},
        cwd=str(ROOT),
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    status = proc.wait(60)
    return status, ANSI.sub("", b"".join(chunks).decode(errors="replace"))


def test_tables_on_a_terminal_and_plain_lines_in_a_pipe(
    cli: Svcm, server: Server, tmp_path: Path
) -> None:
    name = unique()
    created = cli("projects", "create", name, "--json").ok().json()
    env = clean_env(tmp_path / "c.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)

    status, shown = on_terminal(["projects", "show", name], env)
    assert status == 0, shown
    assert "Project svc_proj_" in shown and "KIND" in shown and "LAST USED" in shown
    assert "active" in shown and "svc_live_..." in shown

    status, shown = on_terminal(["keys", "create", "-p", name, "--kind", "share"], env)
    assert status == 0, shown
    assert "Created share key" in shown and "(shown once)" in shown

    piped = cli("keys", "list", "-p", created["id"]).ok().stdout.splitlines()
    assert len(piped) == 3 and all(line.count("\t") == 6 for line in piped)
    assert not any("KIND" in line for line in piped)
