"""The suite's servers, forked from a process that has imported svc already.

A server started as ``python -c <program>`` spent ~0.9 s of CPU importing svc, Starlette,
SQLAlchemy, clickhouse-connect and uvicorn before it did anything, ~150 times a run, on a
machine whose two cores the suite keeps busy. Each test process now starts one
``multiprocessing`` fork server that imports them once (``PRELOAD``: nothing that starts a
thread or loads chDB, which each server loads itself, as before), and a server is a fork of
it that runs the same program with the same arguments, environment, working directory and
log file as the command did. :class:`ForkedServer` answers what the tests ask of a
``subprocess.Popen`` (``pid``, ``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``,
``returncode``: minus the signal's number when a signal ended it).

Differences from a fresh interpreter, none of which svc depends on: the modules of ``PRELOAD``
are imported before the program runs, and the process ends as ``multiprocessing`` ends its
children (non-daemon threads joined, then ``os._exit``: no ``atexit`` handlers; svc registers
none). tests/test_forked_server.py checks that a forked server maps the same libraries as one
started as a command; tests/test_server_footprint.py, that it maps no data-frame library.
"""

from __future__ import annotations

import builtins
import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
from multiprocessing.process import BaseProcess
from typing import Any

#: Imported once by the fork server: what ``svc.cli.serve.run`` imports, and no more.
PRELOAD = [
    "tests.forked",
    "svc.app",
    "svc.cli.serve",
    "svc.http.analytics",
    "svc.http.edge_auth",
    "svc.http.limits",
    "svc.http.logs",
    "svc.http.observe",
    "svc.http.server",
    "uvicorn",
]


def run_program(program: str, argv: list[str], env: dict[str, str], log: str, cwd: str) -> None:
    """In the forked child: what ``python -c program *argv`` with ``env``, ``cwd`` and its
    output appended to ``log`` would run."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["-c", *argv]
    sys.path.insert(0, "")  # as ``-c`` does
    exec(compile(program, "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})


_context: Any = None


def start(program: str, argv: list[str], env: dict[str, str], log: str, cwd: str) -> ForkedServer:
    """Fork ``program`` from this test process's fork server (started at the first call)."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    process = _context.Process(target=run_program, args=(program, argv, env, log, cwd))
    process.start()
    return ForkedServer(process)


class ForkedServer:
    """The part of ``subprocess.Popen``'s interface the tests use, over a forked process."""

    def __init__(self, process: BaseProcess) -> None:
        self._process = process
        self.pid: int = process.pid or 0
        self.args = "forked server"

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
