"""The suite's servers are forks of a process that imported svc (tests/forked.py): such a
server loads the same libraries as one started as a command, and dumps its threads' stacks
on SIGUSR1."""

from __future__ import annotations

from pathlib import Path

from tests.support import Server
from tests.test_server_footprint import _mapped_files


def _libraries(pid: int) -> set[str]:
    """The shared objects of installed packages a process has mapped."""
    return {Path(p).name for p in _mapped_files(pid) if "site-packages" in p and ".so" in p}


def test_a_forked_server_loads_what_a_started_one_does(tmp_path: Path) -> None:
    forked = Server(tmp_path / "forked").start()
    started = Server(tmp_path / "started", forked=False).start()
    try:
        assert forked.proc is not None and started.proc is not None
        libraries = _libraries(started.proc.pid)
        assert any("chdb" in name for name in libraries)  # the store's engine, loaded
        assert _libraries(forked.proc.pid) == libraries
        # a test that waits on a server in vain says where its threads are (SIGUSR1)
        stacks = forked.thread_stacks()
        assert "Thread 0x" in stacks and "Current thread" not in stacks.split("\n", 1)[0]
        assert forked.proc.poll() is None  # and the server goes on
    finally:
        started.stop()
        forked.stop()
