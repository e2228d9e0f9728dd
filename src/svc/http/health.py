"""GET /health: readiness, the ingestion pipeline, the stores and the node. No credential."""

from __future__ import annotations

import asyncio
import os
import resource
import threading
import time
import weakref
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from svc import __version__
from svc.http.common import json_response, runtime_of
from svc.runtime import Runtime
from svc.spool.log import Spool
from svc.timeutil import now_ms


async def get_health(request: Request) -> Response:
    runtime = runtime_of(request)
    body = await asyncio.to_thread(health_report, runtime)
    body["pipeline"]["preflights"] = request.app.state.preflights
    body["limits"] = await request.app.state.limits.health()  # svc.limits: rules, quotas
    body["reads"] = runtime.reads.status()  # svc.reads.scheduler (on the event loop)
    # every event received before it is loaded, on every node (on the event loop)
    body["node"]["loadedThroughMs"] = runtime.loaded_through_ms()
    body.update(request.app.state.operations.status())  # lake, backups (svc.backup.operations)
    return json_response(body, 200 if body["ready"] else 503)


def health_report(runtime: Runtime) -> dict[str, Any]:
    """The health document: nothing secret, every figure cheap to get."""
    loader, spool, ingest = runtime.loader, runtime.spool, runtime.ingest
    store = _probe(runtime.store.ping_ms)
    meta = runtime.meta.probe()  # bounded: a locked or lost store answers in ~1 s at most
    oldest = loader.oldest_waiting_ms
    backlog_bytes = loader.backlog_bytes
    accepting = (
        runtime.ready_at is not None
        and _disk_takes_writes(spool)
        and spool.writable()
        and backlog_bytes < runtime.settings.spool_max_backlog_bytes
        and meta["reachable"]
    )
    return {
        "ok": accepting,
        "ready": accepting,
        "status": "ok"  # degraded: events are taken, but not loaded into the store
        if accepting and store["reachable"] and loader.last_error is None
        else ("degraded" if accepting else "down"),
        "pipeline": {
            "accepting": accepting,
            "backlogEvents": loader.backlog_events,
            "backlogBytes": backlog_bytes,
            "backlogSegments": len(spool.ready),
            "oldestWaitingMs": (now_ms() - oldest) if oldest else 0,
            "spoolError": spool.last_error,
            "commits": spool.commits,
            "loadedEvents": loader.loaded_events,
            "loadedSegments": loader.loaded_segments,
            "loaderError": loader.last_error,
            "quarantinedRecords": loader.quarantine.stats.entries,
            "quarantinedBytes": loader.quarantine.stats.bytes,
            "quarantineLastReason": loader.quarantine.stats.last_reason,
            "tornTailsCut": spool.torn_tails_cut,
            **ingest.outcomes.to_json(),
            "liveSessions": len(ingest.pipeline.sessions),
            "rememberedEventIds": len(ingest.pipeline.event_ids),
        },
        "store": {
            "kind": "clickhouse" if runtime.settings.clickhouse_url else "chdb",
            **store,
            "rolledUpDays": runtime.rollups.days_computed,
            "snapshotsTaken": runtime.snapshots.taken,
        },
        "metadata": {
            "kind": runtime.meta.engine.dialect.name,
            **meta,
        },
        "node": {
            "id": runtime.node_id,
            "version": __version__,
            "pid": os.getpid(),
            "uptimeSeconds": round(time.time() - runtime.started_at, 1),
            "memoryRssBytes": _rss_bytes(),
            "maxRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            # several nodes (svc.cluster): the background jobs' leases, the shared state
            "leases": runtime.leases.status(),
            "shared": None if runtime.shared is None else runtime.shared.status(),
            "otherNodes": runtime.watermarks.others_count,
        },
    }


class _WriteProbe:
    """/health's own check that the spool's disk takes a write (a small file written,
    fsynced and removed by ``Spool.probe_writable``, which clears the spool's last error when
    it succeeds): so /health turns 200 again once a full disk has room, with no ingest
    request to find out, and turns 503 on a disk that filled up before any request failed.
    At most one probe a second; a /health meanwhile reads the last result."""

    INTERVAL_S = 1.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.at = float("-inf")
        self.ok = True

    def check(self, spool: Spool) -> bool:
        if time.monotonic() - self.at < self.INTERVAL_S or not self.lock.acquire(blocking=False):
            return self.ok
        try:
            self.ok = spool.probe_writable()
            self.at = time.monotonic()
        finally:
            self.lock.release()
        return self.ok


_PROBES: weakref.WeakKeyDictionary[Spool, _WriteProbe] = weakref.WeakKeyDictionary()


def _disk_takes_writes(spool: Spool) -> bool:
    probe = _PROBES.get(spool)
    if probe is None:
        probe = _PROBES.setdefault(spool, _WriteProbe())
    return probe.check(spool)


def _probe(ping: Any) -> dict[str, Any]:
    try:
        return {"reachable": True, "latencyMs": round(ping(), 2), "error": None}
    except Exception as exc:
        return {"reachable": False, "latencyMs": None, "error": f"{type(exc).__name__}"}


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
