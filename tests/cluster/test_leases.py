"""The background jobs' leases (svc.cluster.leases) on real PostgreSQL: one holder at a time,
renewed by its holder, taken over once a dead holder's lease expired, never before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from svc.cluster.leases import Leases
from svc.meta.store import MetaStore
from tests.test_meta_store import postgres_url

ROOT = Path(__file__).resolve().parent.parent.parent


def test_one_holder_renewals_and_takeover_after_expiry(pg_meta: MetaStore) -> None:
    a = Leases(pg_meta.engine, "a", 10)
    b = Leases(pg_meta.engine, "b", 10)
    t = 1_000_000
    assert a.hold("lake", t) and not b.hold("lake", t)
    assert a.hold("lake", t + 9_000)  # renewed: now until t + 19 s
    assert not b.hold("lake", t + 15_000)
    assert not b.hold("lake", t + 19_000 - 1)
    # a stops renewing (dead): b takes the lease once it expired
    assert b.hold("lake", t + 19_000)
    assert b.taken_over == 1
    assert not a.hold("lake", t + 19_001)  # a, back, finds it taken
    row = {r.job: r for r in b.rows()}["lake"]
    assert row.holder == b.holder and row.expires_at == t + 29_000
    # jobs are independent; a release hands a lease over at once
    assert a.hold("mail", t + 20_000)
    a.release("mail")
    assert b.hold("mail", t + 20_001)


def test_racing_nodes_take_an_expired_lease_once(pg_meta: MetaStore) -> None:
    nodes = [Leases(pg_meta.engine, f"n{i}", 5) for i in range(8)]
    t = 5_000_000
    for round_ in range(5):
        now = t + round_ * 10_000  # the previous round's lease has expired
        won: list[str] = []
        start = threading.Barrier(len(nodes))

        def race(
            leases: Leases,
            now: int = now,
            won: list[str] = won,
            start: threading.Barrier = start,
        ) -> None:
            start.wait()
            if leases.hold("rollups", now):
                won.append(leases.holder)

        threads = [threading.Thread(target=race, args=(n,)) for n in nodes]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(won) == 1, won


def test_a_killed_holder_is_taken_over_within_its_ttl(pg_meta: MetaStore) -> None:
    ttl = 2.0
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.cluster.lease_holder", postgres_url(), "backups", str(ttl)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line and line[0] == "held", line
        doomed = line[1]
        other = Leases(pg_meta.engine, "survivor", ttl)
        time.sleep(ttl * 1.5)  # past one ttl: the holder renews meanwhile
        assert not other.hold("backups")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at = int(time.time() * 1000)
        last = {r.job: r for r in other.rows()}["backups"]
        assert last.holder == doomed
        while not other.hold("backups"):
            assert not other.held_here("backups")
            time.sleep(0.05)
        taken = int(time.time() * 1000)
        # taken once the dead holder's last renewal expired, never before
        assert taken >= last.expires_at
        assert last.expires_at <= killed_at + int(ttl * 1000)
        assert {r.job: r for r in other.rows()}["backups"].holder == other.holder
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_disabled_leases_are_always_held_and_write_nothing(pg_meta: MetaStore) -> None:
    one = Leases(pg_meta.engine, "solo", 10, enabled=False)
    assert one.hold("rollups") and one.held_here("rollups")
    assert one.rows() == [] and one.status()["leases"] == []
