"""Real faults against the spool: a full disk, flipped and cut bytes, rows the store refuses,
``kill -9`` at random points. Each test compares the exact set of stored events with what was
acknowledged: nothing acknowledged missing, nothing stored twice, nothing stored that was
refused."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.spool.frames import frame, scan
from tests.faults.support import (
    HOLD_SPOOL,
    Acknowledged,
    assert_exactly,
    batch,
    client,
    fill,
    quarantine_index,
    seqs_in,
    small_filesystem,
    stored_seqs,
)
from tests.support import Server

HOLD = HOLD_SPOOL


def _open_segment(data_dir: Path) -> Path:
    (path,) = (data_dir / "spool").glob("*.log")
    return path


def _spooled_then_killed(
    srv: Server, name: str, batches: int, size: int = 10
) -> tuple[dict[str, Any], Acknowledged, Path]:
    """Start ``srv`` holding its open segment, send ``batches`` batches of ``size`` events to
    a new project ``name`` (each its own group commit, so its own record), kill it with
    ``kill -9`` and return the project, what was acknowledged and the segment left open."""
    srv.env.update(HOLD)
    srv.start()
    project = srv.create_project(name)
    acks = Acknowledged()
    with client(project["keys"]["secret"]) as http:
        for i in range(batches):
            assert acks.send(http, srv.url, batch(i * size, size)) == 200
    srv.stop(kill=True)
    srv.env.clear()
    return project, acks, _open_segment(srv.data_dir)


def test_a_full_disk_stores_nothing_of_a_refused_batch_and_blocks_nothing(
    fresh_server: Server, tmp_path: Path
) -> None:
    """Issue 16, problems 1 and 2: the spool's disk fills during 100-event batches. A batch
    answered 503 leaves nothing behind (its retry is stored once, and one never retried is not
    stored at all); the acknowledged writes that follow a failed one load; nothing stalls."""
    srv = fresh_server
    with small_filesystem(tmp_path / "small", "2m") as small:
        srv.data_dir.mkdir(parents=True)
        (small / "spool").mkdir()
        (srv.data_dir / "spool").symlink_to(small / "spool")
        srv.env.update(HOLD)
        srv.start()
        project = srv.create_project("fulldisk")
        acks = Acknowledged()
        filler = fill(small, leave_bytes=400_000)
        seq = 0
        with client(project["keys"]["secret"]) as http:
            while len(acks.refused) < 4 and seq < 20_000:
                acks.send(http, srv.url, batch(seq, 100))
                seq += 100
            assert acks.refused, "the disk never filled"
            assert acks.ok, "nothing was acknowledged before the disk filled"
            filler.unlink()
            # The disk has room again: the service takes events again by itself.
            deadline = time.monotonic() + 10
            while acks.send(http, srv.url, batch(seq, 100)) != 200:
                assert time.monotonic() < deadline, srv.health()
                time.sleep(0.1)
            seq += 100
            retried, abandoned = acks.refused[::2], acks.refused[1::2]
            for seqs in retried:
                assert acks.send(http, srv.url, batch(seqs[0], len(seqs))) == 200
        srv.stop()  # SIGTERM: the open segment is closed and loaded
        srv.env.clear()
        srv.start()
        srv.wait_loaded()
        stored = stored_seqs(srv, project)
        assert_exactly(stored, set(acks.ok))
        for seqs in abandoned:
            assert not set(seqs) & set(stored), "a batch answered 503 was stored"
        assert srv.health()["pipeline"]["quarantinedRecords"] == 0
        srv.stop()


def test_a_flipped_byte_costs_its_record_only_and_is_quarantined(fresh_server: Server) -> None:
    """Issue 16, problem 1: one flipped byte in a segment stopped the loader and start-up for
    good. Now the damaged record is quarantined, every other acknowledged event is stored once,
    and the service starts."""
    srv = fresh_server
    project, acks, segment = _spooled_then_killed(srv, "flip", 8)
    data = bytearray(segment.read_bytes())
    records = scan(bytes(data)).records
    assert len(records) == 8
    victim = records[3]
    data[victim.offset + 40] ^= 0x20  # a byte inside the payload
    segment.write_bytes(bytes(data))

    srv.start()
    srv.wait_loaded()
    lost = set(seqs_in(victim.payload))
    assert len(lost) == 10
    assert_exactly(stored_seqs(srv, project), set(acks.ok) - lost)
    pipeline = srv.health()["pipeline"]
    assert pipeline["quarantinedRecords"] == 1
    assert "checksum" in pipeline["quarantineLastReason"]
    (entry,) = quarantine_index(srv.data_dir)
    kept = srv.data_dir / "spool" / "quarantine" / entry["file"]
    assert kept.read_bytes()[16:] != victim.payload and len(kept.read_bytes()) == entry["bytes"]
    # and the service goes on: new events load behind the damaged segment
    with client(project["keys"]["secret"]) as http:
        assert acks.send(http, srv.url, batch(1000, 5)) == 200
    srv.wait_loaded()
    assert_exactly(stored_seqs(srv, project), set(acks.ok) - lost)
    # a restart does not quarantine it again, and counts what is quarantined
    srv.stop()
    srv.start()
    assert srv.health()["pipeline"]["quarantinedRecords"] == 1
    srv.stop()


def test_a_segment_cut_short_keeps_the_records_before_the_cut(fresh_server: Server) -> None:
    srv = fresh_server
    project, _, segment = _spooled_then_killed(srv, "cut", 6)
    records = scan(segment.read_bytes()).records
    cut_at = records[4].offset + 25  # inside the fifth record's payload
    with open(segment, "r+b") as f:
        f.truncate(cut_at)
    srv.start()
    srv.wait_loaded()
    kept = {s for r in records[:4] for s in seqs_in(r.payload)}
    assert_exactly(stored_seqs(srv, project), kept)
    assert srv.health()["pipeline"]["tornTailsCut"] == 1
    srv.stop()


def test_rows_the_store_refuses_are_quarantined_with_the_reason(fresh_server: Server) -> None:
    """A record whose checksum holds but whose row the store cannot parse (CANNOT_READ_...
    stopped the loader for good): the store's good rows of that segment go in, the refused
    row is quarantined with the store's reason, and later segments load."""
    srv = fresh_server
    project, acks, segment = _spooled_then_killed(srv, "refused", 3)
    records = scan(segment.read_bytes()).records
    good_line = records[0].payload.split(b"\n")[0] + b"\n"
    bad_line = good_line.replace(b'"seq":"0"', b'"seq":"999"').replace(b'"ts":"', b'"ts":"x')
    bad_line = bad_line.replace(b'"properties":{', b'"properties":{"broken":', 1)
    odd = good_line.replace(b'"seq":"0"', b'"seq":"998"').replace(b"ev-0", b"ev-998")
    with open(segment, "ab") as f:
        f.write(frame(odd + bad_line, 2))

    srv.start()
    srv.wait_loaded()
    assert_exactly(stored_seqs(srv, project), set(acks.ok) | {998})
    (entry,) = quarantine_index(srv.data_dir)
    assert entry["reason"].startswith("refused by the store")
    assert entry["events"] == 1
    with client(project["keys"]["secret"]) as http:
        assert acks.send(http, srv.url, batch(500, 3)) == 200
    srv.wait_loaded()
    assert_exactly(stored_seqs(srv, project), set(acks.ok) | {998})
    srv.stop()


@pytest.mark.parametrize("seed", [11, 23, 37])
def test_kill_9_at_random_points_loses_and_doubles_nothing(fresh_server: Server, seed: int) -> None:
    """Clients send batches of random sizes while the service is killed at random points of
    its write and load cycle (segments close every 20 ms, so loads run all the time), twice,
    then restarted; what was acknowledged is stored exactly once."""
    rng = random.Random(seed)
    srv = fresh_server
    srv.env["SVC_SPOOL_FLUSH_INTERVAL_MS"] = "20"
    srv.start()
    project = srv.create_project(f"kill{seed}")
    acks = Acknowledged()
    counter = iter(range(0, 10**9, 1000))
    lock = threading.Lock()

    def run_clients(until: float) -> list[threading.Thread]:
        def loop() -> None:
            with client(project["keys"]["secret"]) as http:
                while time.monotonic() < until:
                    with lock:
                        first = next(counter)
                    acks.send(http, srv.url, batch(first, rng.choice([1, 7, 50, 200])))

        threads = [threading.Thread(target=loop) for _ in range(6)]
        for t in threads:
            t.start()
        return threads

    for _ in range(2):
        kill_after = rng.uniform(0.3, 2.0)
        threads = run_clients(time.monotonic() + kill_after + 0.5)
        time.sleep(kill_after)
        srv.stop(kill=True)
        for t in threads:
            t.join()
        srv.start()
    srv.wait_loaded()
    assert len(acks.ok) > 100
    assert_exactly(stored_seqs(srv, project), set(acks.ok), acks.unanswered)
    srv.stop()


def test_a_legacy_segment_of_plain_lines_still_loads(fresh_server: Server) -> None:
    """A spool written before records were framed (one JSON row per line) loads after an
    upgrade."""
    srv = fresh_server
    project, acks, segment = _spooled_then_killed(srv, "legacy", 1, size=20)
    plain = scan(segment.read_bytes()).payload()
    segment.unlink()
    (srv.data_dir / "spool" / "0000000000001-00000001-old.ready").write_bytes(plain)
    srv.start()
    srv.wait_loaded()
    assert_exactly(stored_seqs(srv, project), set(acks.ok))
    srv.stop()


def test_spool_files_are_private(fresh_server: Server) -> None:
    srv = fresh_server.start()
    project = srv.create_project("modes")
    with client(project["keys"]["secret"]) as http:
        assert http.post(srv.url + "/analytics", json=batch(0, 1)[0]).status_code == 200
    spool = srv.data_dir / "spool"
    assert os.stat(spool).st_mode & 0o077 == 0
    srv.stop()
    assert httpx is not None


_DROP_EVENTS = """
import sys
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.client.command("DROP TABLE events")
"""


def test_a_broken_store_is_waited_for_not_blamed_on_the_data(fresh_server: Server) -> None:
    """The store answers ``SELECT 1`` but refuses every insert (its events table is gone):
    that is the store's trouble, not the rows'. Nothing is quarantined; the segment waits in
    the spool and /health names the loader's error."""
    srv = fresh_server
    _spooled_then_killed(srv, "broken", 1)
    done = subprocess.run(
        [sys.executable, "-c", _DROP_EVENTS, str(srv.data_dir)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    srv.start(healthy=False)
    deadline = time.monotonic() + 10
    while not (pipeline := srv.health()["pipeline"])["loaderError"]:
        assert time.monotonic() < deadline, pipeline
        time.sleep(0.1)
    assert "UNKNOWN_TABLE" in pipeline["loaderError"]
    assert srv.health()["status"] == "degraded"
    assert pipeline["backlogEvents"] == 10
    assert pipeline["quarantinedRecords"] == 0 and not quarantine_index(srv.data_dir)
    assert list((srv.data_dir / "spool").glob("*.ready"))
    srv.stop()


def test_a_segment_that_cannot_be_deleted_stops_the_loader_for_no_longer(
    fresh_server: Server,
) -> None:
    """A failure outside a load's own handling is the loader's error and retried, never the
    loader's end: a segment loaded into the store but immutable (``chattr +i``: deleting it
    fails) keeps the loader retrying, /health naming the error, and once it can be deleted
    the spool drains with every acknowledged event stored once (each retry's insert is
    dropped by its deduplication token)."""
    srv = fresh_server
    project, acks, segment = _spooled_then_killed(srv, "undeletable", 2)
    sealed = segment.with_suffix(".ready")  # as the next start's recovery would name it
    segment.rename(sealed)
    if subprocess.run(["chattr", "+i", str(sealed)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i needs root and a filesystem that keeps the flag")
    try:
        srv.start(healthy=False)
        deadline = time.monotonic() + 20
        while not (pipeline := srv.health()["pipeline"])["loaderError"]:
            assert time.monotonic() < deadline, pipeline
            time.sleep(0.1)
        assert "PermissionError" in pipeline["loaderError"], pipeline
        time.sleep(1.5)  # retries meanwhile, each insert of the segment dropped as a replay
        assert pipeline["backlogEvents"] == 20 and sealed.exists()
    finally:
        subprocess.run(["chattr", "-i", str(sealed)], check=True)
    srv.wait_loaded()
    assert srv.health()["pipeline"]["loaderError"] is None
    assert_exactly(stored_seqs(srv, project), set(acks.ok))
    srv.stop()
