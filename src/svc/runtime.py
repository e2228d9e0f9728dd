"""The running service: every long-lived part, started and stopped in order.

Start-up: migrate metadata and event store, recover the spool and load what it holds, rebuild
the in-memory state (eventId window, live sessions, usage of this month) from the store and
from whatever could not be loaded yet, then start
the spool writer, the loader and the housekeeping task. Shut-down: stop taking events, commit
and close the spool, load what is ready, close the stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from svc import __version__
from svc.auth import Authenticator, load_admin_token_hash
from svc.cluster.leases import Leases
from svc.cluster.watermarks import Watermarks, node_id_of
from svc.errors import Unavailable
from svc.ingestion import client_sessions
from svc.ingestion.identity import Salts, salt_days, stored_visitor_id
from svc.ingestion.service import IngestService
from svc.ingestion.shared_state import SharedState
from svc.mail.service import MailService
from svc.meta import files as meta_files
from svc.meta.dropped import DroppedRecorder
from svc.meta.store import MetadataUnavailable, MetaStore, Project
from svc.meta.usage import UsageRecorder
from svc.queries import sql
from svc.reads.scheduler import ReadScheduler
from svc.retention.job import RetentionJob
from svc.settings import Settings
from svc.spool.loader import Loader
from svc.spool.log import Spool, read_segment
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups
from svc.storage.snapshots import Snapshots
from svc.timeutil import month_of, now_ms

log = logging.getLogger(__name__)


#: A rollup pass runs at least this often (s), though nothing it depends on changed: the
#: snapshots' old versions are dropped on time (svc.storage.snapshots.KEEP_OLD_VERSIONS).
FULL_PASS_EVERY = 60.0


class Runtime:
    """Holds the service's parts; one per process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.node_id = node_id_of(settings.node_id or socket.gethostname())
        self.started_at = time.time()
        self.ready_at: float | None = None
        self.meta = MetaStore(settings.effective_meta_url)
        self.store = EventStore(settings)
        # which reads of GET /metrics* run now, each on a read handle of the store's
        self.reads = ReadScheduler(
            settings.effective_read_slots,
            settings.reads_per_project,
            settings.read_queue_seconds,
            memory_limit_bytes=settings.memory_limit_mb * 1024 * 1024,
            light_slots=max(0, settings.read_light_slots),
        )
        # the threads the admitted reads run in: as many as may run, apart from the event
        # loop's default pool (so /health, sign-in and metadata look-ups never wait for them)
        self.read_threads = ThreadPoolExecutor(
            settings.read_lanes_slots, thread_name_prefix="svc-read"
        )
        self.spool = Spool(
            settings.spool_dir,
            segment_bytes=settings.spool_segment_bytes,
            flush_interval_ms=settings.spool_flush_interval_ms,
            fsync=settings.fsync,
            node_id=self.node_id,
            on_ready=self._segment_ready,
        )
        self.loader = Loader(
            self.spool, self.store, release_memory_s=settings.store_memory_release_seconds
        )
        self.salts = Salts(self._fetch_salts)
        self._salts_ahead: dict[str, bytes] = {}  # see _refresh_salts
        self.ingest = IngestService.build(settings, self.spool, self.salts)
        # Several nodes on one ClickHouse server (svc.cluster): each background job runs on
        # the node holding its lease; ingestion's state and the memo's generation in Redis.
        self.leases = Leases(
            self.meta.engine,
            self.node_id,
            settings.job_lease_seconds,
            enabled=bool(settings.clickhouse_url),
        )
        # the other nodes' watermarks: the jobs trust the least (svc.cluster.watermarks)
        self.watermarks = Watermarks(
            self.meta.engine, self.node_id, enabled=bool(settings.clickhouse_url)
        )
        self.shared: SharedState | None = (
            SharedState(settings, self.ingest, self.store)
            if settings.clickhouse_url and settings.redis_url
            else None
        )
        self.auth: Authenticator | None = None
        self.generated_admin_token: str | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        self.rollups = Rollups(self.store)
        self.snapshots = Snapshots(self.store)
        # retention: deletes what projects keep no longer, after a rollup pass (svc.retention)
        self.retention = RetentionJob(self.store, self.rollups, self.meta.list_projects, settings)
        self._rolling_up: asyncio.Task[None] | None = None
        # the rollup passes, for /internal/metrics: how many, their time, the last's, failures
        self.rollup_runs, self.rollup_seconds_total, self.rollup_last_seconds = 0, 0.0, 0.0
        self.rollup_failures = 0
        self._lock_fd: int | None = None
        # the outbox, email reports and traffic alerts (svc.mail)
        self.mail = MailService(
            settings,
            self.meta,
            self.store,
            self.loaded_through_ms,
            self.retention.raw_from,
            held=self.leases.held,
        )

    def _segment_ready(self) -> None:
        self.loader.notify()

    @property
    def authenticator(self) -> Authenticator:
        assert self.auth is not None, "the runtime is not started"
        return self.auth

    async def start(self) -> None:
        settings = self.settings
        meta_files.private_dir(settings.data_dir)  # 0700, tightened if it was looser
        self._lock_fd = lock_data_dir(settings.data_dir)
        # a data directory that had a metadata store and lost it: refuse (svc.meta.files)
        meta_files.check_present(
            settings.data_dir,
            settings.effective_meta_url,
            embedded_store=not settings.clickhouse_url,
            start_fresh=settings.meta_start_fresh,
        )
        await asyncio.to_thread(self.meta.create_file)
        token_hash, generated = load_admin_token_hash(settings.data_dir, settings.admin_token)
        self.generated_admin_token = generated
        self.auth = Authenticator(self.meta, token_hash, settings.key_cache_seconds)
        warm_up = (
            asyncio.create_task(asyncio.to_thread(self.ingest.pipeline.warm_up))
            if settings.warm_up
            else None
        )
        await asyncio.to_thread(self.meta.migrate)
        await asyncio.to_thread(self._refresh_salts, now_ms())
        await asyncio.to_thread(self.spool.recover)
        if self.shared is not None:  # a kill between fsync and confirm left them pending
            await asyncio.to_thread(self.shared.confirm_spooled, [s.path for s in self.spool.ready])
        await asyncio.to_thread(self.loader.quarantine.load_stats)
        try:
            await asyncio.to_thread(self.store.migrate)
            # The oldest segment a previous run left goes into the store first: the loader
            # goes in order, one segment at a time, so only that one can have been inserted
            # but not deleted; it is then in one place only, and counted once. The rest is
            # counted from the spool and loaded in the background, while events are taken.
            await self.loader.drain(max_segments=1)
            await asyncio.to_thread(self._seed_from_store)
            # the client-named sessions the last run remembered (svc.ingestion.client_sessions)
            await asyncio.to_thread(
                client_sessions.load, self.ingest.pipeline.sessions, settings.data_dir, now_ms()
            )
            await asyncio.to_thread(self.retention.load)
        except Exception as exc:  # the store may be down: ingestion still spools
            log.error("event store unavailable at start-up: %s", exc)
            self.loader.last_error = f"{type(exc).__name__}: {exc}"[:500]
        # Segments still spooled are not in the store: count them from the spool.
        await asyncio.to_thread(self._seed_from_spool, [s.path for s in self.spool.ready])
        if warm_up is not None:
            await warm_up
        try:  # before any event is taken: the others' jobs wait for what the spool holds
            await asyncio.to_thread(self.watermarks.publish, self._own_loaded_through_ms())
        except Exception as exc:  # the housekeeping tries again
            log.warning("cannot record this node's watermark: %s", exc)
        await self.spool.start()
        await self.loader.start()
        self.loader.notify()
        self._housekeeping = asyncio.create_task(self._housekeep(), name="housekeeping")
        self._rolling_up = asyncio.create_task(self._roll_up(), name="rollups")
        await self.mail.start()
        self.ready_at = time.time()

    async def stop(self) -> None:
        await self.mail.stop()
        self.read_threads.shutdown(wait=False, cancel_futures=True)
        if self._rolling_up is not None:
            self._rolling_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rolling_up
        if self._housekeeping is not None:
            self._housekeeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeping
        await self.spool.close()
        await self.loader.stop(drain=True)
        try:  # nothing left to load: the other nodes' jobs need not wait for this one
            if self.loader.backlog_events == 0:
                await asyncio.to_thread(self.watermarks.withdraw)
            else:
                await asyncio.to_thread(self.watermarks.publish, self._own_loaded_through_ms())
        except Exception as exc:
            log.warning("cannot record this node's watermark: %s", exc)
        await asyncio.to_thread(self._flush_last_used)
        try:  # for the next run: a client's session goes on over a restart
            await asyncio.to_thread(
                client_sessions.save, self.ingest.pipeline.sessions, self.settings.data_dir
            )
        except OSError as exc:
            log.warning("cannot save the client sessions: %s", exc)
        await asyncio.to_thread(self.leases.release_all)  # another node takes them at once
        if self.shared is not None:
            await self.shared.link.close()
        await asyncio.to_thread(self.store.close)
        await asyncio.to_thread(self.meta.close)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None

    async def delete_project(self, project: Project) -> None:
        """Delete a project everywhere, so that nothing of it reaches a later project of the
        same id: refuse its events from now on, close the spool's open segment and wait until
        the loader has loaded everything spooled before (SVC_DELETE_DRAIN_SECONDS at most, else
        Unavailable and nothing is deleted), then delete its rows in the event store, its
        metadata and keys, and its in-memory state (sessions, event ids, counts).

        With several processes on one ClickHouse server, the other processes' spools are
        not drained: their events of the project still arrive (documented)."""
        ingest = self.ingest
        ingest.closing.add(project.id)
        try:
            newest = await self.spool.seal()
            if not await self.loader.wait_loaded(newest, self.settings.delete_drain_seconds):
                raise Unavailable(
                    "the project's events waiting in the spool could not be loaded into the "
                    "store to be deleted with it; retry later",
                    headers={"Retry-After": "10"},
                )
            await asyncio.to_thread(self.store.delete_project, project.id)
            await asyncio.to_thread(self.meta.delete_project, project.id)
            self.authenticator.forget(project_id=project.id)
            ingest.forget_project(project)
            if ingest.shared is not None:
                await ingest.shared.forget_project(project.id)
        finally:
            ingest.closing.discard(project.id)

    # state rebuilt at start-up --------------------------------------------------------------

    def _seed_from_store(self) -> None:
        now = datetime.now(UTC)
        pipeline = self.ingest.pipeline
        window = timedelta(milliseconds=pipeline.event_ids.window_ms)
        stmt = sql.recent_event_ids((now - window).replace(tzinfo=None))
        pipeline.event_ids.seed(
            (p, e, int(ms)) for p, e, ms in self.store.query(stmt.sql, stmt.params)
        )
        timeout = timedelta(milliseconds=pipeline.sessions.timeout_ms)
        stmt = sql.recent_sessions((now - 2 * timeout).replace(tzinfo=None))
        pipeline.sessions.seed(  # the tracker keys visitors by their unmixed hash
            (p, stored_visitor_id(int(v), int(st)), int(s), int(st), int(a), int(b), int(r))
            for p, v, s, st, a, b, r in self.store.query(stmt.sql, stmt.params)
        )
        month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        stmt = sql.usage_by_project_month(month_start.replace(tzinfo=None))
        for project_id, month, n in self.store.query(stmt.sql, stmt.params):
            self.ingest.usage.add(project_id, month, int(n))

    def _seed_from_spool(self, paths: list[Path]) -> None:
        """Events in the spool are not in the store yet: count them in the in-memory state
        (only the fields that takes are decoded: ~1.8M rows of a 1 GiB backlog)."""
        pipeline = self.ingest.pipeline
        decoder = msgspec.json.Decoder(_SeedRow)
        for path in paths:
            for line in read_segment(path).payload().splitlines():
                try:
                    row = decoder.decode(line)
                    received = _ms_of(row.received_at)
                    ts = _ms_of(row.ts)
                    start = _ms_of(row.session_start) if row.session_start else ts
                except (msgspec.DecodeError, ValueError):
                    continue  # the loader quarantines what it cannot load
                if row.event_id:
                    pipeline.event_ids.seed([(row.project_id, row.event_id, received)])
                visitor = stored_visitor_id(row.visitor_id, start)
                pipeline.sessions.seed(
                    [(row.project_id, visitor, row.session_id, start, ts, ts, received)]
                )
                self.ingest.usage.add(row.project_id, month_of(received), 1)

    # housekeeping ---------------------------------------------------------------------------

    def loaded_through_ms(self) -> int:
        """A time before which every event received is in the store: the oldest receipt
        still in a request on its way to the spool, or in the spool, else now; with several
        nodes, the least of every node's (svc.cluster.watermarks). Read on the event loop,
        where these change."""
        return self.watermarks.through(self._own_loaded_through_ms())

    def _own_loaded_through_ms(self) -> int:
        """:meth:`loaded_through_ms` of this process alone."""
        waiting = [now_ms()]
        oldest = self.loader.oldest_waiting_ms  # the open segment and the group waiting too
        if oldest is not None:
            waiting.append(oldest)
        in_flight = self.ingest.oldest_in_flight_ms()
        if in_flight is not None:
            waiting.append(in_flight)
        return min(waiting)

    def _pass_state(self) -> tuple[int, int] | None:
        """What a rollup pass depends on besides the clock's hour, or None when that is not
        known: the writes of this process to the store (an embedded store has no other
        writer; a ClickHouse server may have several) and the UTC hour (a day becomes due
        for its rollup an hour after its end)."""
        if self.settings.clickhouse_url:
            return None
        return self.store.writes, int(time.time() // 3600)

    async def _roll_up(self) -> None:
        """Keep the daily rollups current (svc.storage.rollups), off the event loop. A pass
        is skipped when nothing it depends on changed since the last one that left nothing
        for later (:meth:`_pass_state`), but one runs at least every
        :data:`FULL_PASS_EVERY`: an idle store with passes every 0.2 s spent 17-28 % of a
        core on them (one of 300 events, one of 1M)."""
        done: tuple[int, int] | None = None
        done_at = 0.0
        while True:
            started = time.perf_counter()
            state = self._pass_state()
            idle = state is not None and state == done and started - done_at < FULL_PASS_EVERY
            # several nodes: the holder of the lease alone (svc.cluster.leases)
            if not idle and not await self.leases.held("rollups"):
                idle = True
            try:
                if not idle:
                    done = None

                    async def rollup_pass() -> None:
                        days = await asyncio.to_thread(
                            self.rollups.refresh, None, self.loaded_through_ms()
                        )
                        if days:
                            log.info("rolled up %d day(s) of sessions", days)
                        # today's days not rolled up: a snapshot (svc.storage.snapshots)
                        await asyncio.to_thread(
                            self.snapshots.refresh, None, self.loaded_through_ms()
                        )

                    await self.leases.run_held("rollups", rollup_pass)
                    if not self.snapshots.deferred:
                        done, done_at = state, started
            except Exception as exc:  # the store may be down; try again later
                self.rollup_failures += 1
                log.warning("rollups: %s", exc)
            if not idle:  # the passes that ran (svc_rollup_duration_seconds)
                self.rollup_last_seconds = time.perf_counter() - started
                self.rollup_seconds_total += self.rollup_last_seconds
                self.rollup_runs += 1
            try:  # after the pass: no day is deleted before its rollups are current
                await self.leases.run_held(
                    "retention", lambda: asyncio.to_thread(self.retention.run_if_due)
                )
            except Exception as exc:  # the next pass tries again
                log.warning("retention: %s", exc)
            await asyncio.sleep(self.settings.rollup_interval_seconds)

    async def _housekeep(self) -> None:
        usage = UsageRecorder(self.meta)  # the monthly counts, recorded in the metadata store

        async def record_usage() -> None:
            counts = usage.snapshot(self.ingest.usage.counts, self.ingest.quotas.peek)
            await asyncio.to_thread(usage.flush, counts)

        drops = DroppedRecorder(self.meta)  # what the pipeline dropped (svc.meta.dropped)
        flushing: asyncio.Future[None] | None = None

        async def record_drops() -> None:
            """Record the drops counted since the last time. Counts are added, not replaced:
            what failed goes back to the counts, and a flush cut short by stop() is waited
            for, never repeated."""
            nonlocal flushing
            if flushing is not None:
                await asyncio.wait([flushing])
            counts, samples = self.ingest.drops.take()
            if not counts and not samples:
                return

            def settled(done: asyncio.Future[None]) -> None:
                if done.cancelled() or done.exception() is not None:  # nothing was written
                    self.ingest.drops.give_back(counts, samples)  # the next tick tries again

            flushing = asyncio.ensure_future(asyncio.to_thread(drops.flush, counts, samples))
            flushing.add_done_callback(settled)
            await asyncio.shield(flushing)

        # Every metadata call runs in a worker thread: a metadata store that is locked or slow
        # delays housekeeping, never the event loop.
        try:
            while True:
                await asyncio.sleep(self.settings.housekeeping_interval_seconds)
                try:
                    now = now_ms()
                    pipeline = self.ingest.pipeline
                    pipeline.sessions.expire(now)
                    pipeline.event_ids.expire(now)
                    await asyncio.to_thread(self.meta.check_file)  # deleted or replaced?
                    await asyncio.to_thread(self._refresh_salts, now)
                    own = self._own_loaded_through_ms()  # on the event loop, where it changes
                    await asyncio.to_thread(self.watermarks.publish, own)
                    await asyncio.to_thread(self._flush_last_used)
                    await record_usage()
                    await record_drops()
                    await asyncio.to_thread(drops.prune_if_due, now)
                except Exception as exc:  # housekeeping must never stop the service
                    if isinstance(exc, MetadataUnavailable):
                        log.warning("housekeeping: %s", exc)
                    else:
                        log.exception("housekeeping failed")
        finally:  # stopped: record the last counts
            try:
                await record_usage()
            except Exception:
                log.exception("could not record usage")
            try:
                await record_drops()
            except Exception:
                log.exception("could not record the dropped events")

    def _flush_last_used(self) -> None:
        """Record when keys were last used (blocking: call it in a worker thread)."""
        if self.auth is None:
            return
        used = self.auth.take_last_used()
        if used:
            try:
                self.meta.touch_keys(used)
            except Exception as exc:
                self.auth.give_back_last_used(used)  # the next tick tries again
                log.warning("could not record key use: %s", exc)

    def _fetch_salts(self, days: list[str]) -> dict[str, bytes]:
        """The salts :class:`Salts` asks for when the day changes: from those fetched ahead by
        the housekeeping, so that the first event after midnight (on the event loop) reads no
        metadata; from the store only when they are not there."""
        ahead = self._salts_ahead
        if all(day in ahead for day in days):
            return {day: ahead[day] for day in days}
        return self.meta.salts_for(days)

    def _refresh_salts(self, now: int) -> None:
        """Fetch the live salts, and ahead of midnight the next day's too (blocking: call it
        in a worker thread); salts of days before yesterday are destroyed."""
        lead = int(max(60.0, 3 * self.settings.housekeeping_interval_seconds) * 1000)
        days = sorted(set(salt_days(now)) | set(salt_days(now + lead)))
        if any(day not in self._salts_ahead for day in days) or len(self._salts_ahead) > len(days):
            self._salts_ahead = self.meta.salts_for(days)
        self.salts.refresh(now)


class _SeedRow(msgspec.Struct):
    """The fields of a spooled row that the in-memory state is rebuilt from."""

    project_id: str
    ts: str
    received_at: str
    visitor_id: int
    session_id: int
    event_id: str = ""
    session_start: str = ""


class DataDirInUse(RuntimeError):
    """Another svc process has the data directory (its spool and store) open."""


def lock_data_dir(data_dir: Path) -> int:
    """Take the data directory for this process: an exclusive ``flock`` on ``svc.lock``, which
    names our pid. Released on stop or when the process dies, even by ``kill -9``."""
    path = data_dir / "svc.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise DataDirInUse(
            f"the data directory {data_dir} is in use by process {holder}; "
            "run one svc process per data directory"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _ms_of(value: str) -> int:
    seconds, _, frac = value.partition(".")
    return int(seconds) * 1000 + int((frac + "000")[:3])


__all__ = ["Runtime", "__version__"]
