"""svc's own figures for GET /internal/metrics (svc.http.internal_metrics), read at each
scrape: from the counters the service keeps anyway and from /health's document of the scrape.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from svc import __version__
from svc.cluster.leases import JOBS
from svc.http.observe import RequestStats
from svc.ingestion.outcomes import DropReason
from svc.limits import timeouts
from svc.runtime import Runtime
from svc.timeutil import now_ms


class ServiceCollector:
    """svc's own figures, read at each scrape (see svc.http.internal_metrics's docstring)."""

    def __init__(self, runtime: Runtime, state: Any) -> None:
        self.runtime = runtime
        self.state = state
        self.report: dict[str, Any] | None = None  # /health's document of this scrape

    def collect(self) -> Iterator[Metric]:
        report = self.report
        if report is None:  # only render() collects
            return
        yield from self._requests()
        yield from self._ingestion(report["pipeline"])
        yield from self._edge()
        yield from self._spool_and_loader(report)
        yield from self._rollups()
        yield from self._operations()
        yield from self._limits()
        yield from self._stores(report)
        yield from self._node(report)

    def _requests(self) -> Iterator[Metric]:
        stats: RequestStats | None = getattr(self.state, "requests", None)
        if stats is None:
            return
        requests = CounterMetricFamily(
            "svc_http_requests",
            "Requests answered, by method, route template and status (none: the client "
            "went away before an answer).",
            labels=["method", "route", "status"],
        )
        for (method, route, status), n in sorted(stats.requests.items()):
            requests.add_metric([method, route, str(status) if status else "none"], n)
        yield requests
        ingest = HistogramMetricFamily(
            "svc_ingest_request_duration_seconds",
            "POST /analytics answered 200 (its events on disk): time from the request's "
            "arrival to the end of its answer.",
        )
        ingest.add_metric([], stats.ingest.cumulative(), stats.ingest.sum)
        yield ingest
        reads = HistogramMetricFamily(
            "svc_read_duration_seconds",
            "Reads (GET /metrics, /metrics/* and /export) by kind, answers other than 4xx: "
            "time from the request's arrival to the end of its answer.",
            labels=["kind"],
        )
        for kind, histogram in stats.reads.items():
            reads.add_metric([kind], histogram.cumulative(), histogram.sum)
        yield reads

    def _ingestion(self, pipeline: dict[str, Any]) -> Iterator[Metric]:
        outcomes = self.runtime.ingest.outcomes
        yield CounterMetricFamily(
            "svc_ingest_events_accepted",
            "Events accepted (on disk, to be loaded into the store).",
            value=outcomes.accepted,
        )
        rejected = CounterMetricFamily(
            "svc_ingest_events_rejected",
            "Events refused, by error code (invalid_request, quota_exceeded, forbidden, ...).",
            labels=["code"],
        )
        for code, n in sorted(outcomes.rejected.items()):
            rejected.add_metric([code], n)
        yield rejected
        dropped = CounterMetricFamily(
            "svc_ingest_events_dropped",
            "Valid events dropped on purpose (answered 200 with X-Svc-Dropped), by reason.",
            labels=["reason"],
        )
        counts = {str(reason): 0 for reason in DropReason}
        counts.update((str(reason), n) for reason, n in outcomes.dropped.items())
        for reason, n in sorted(counts.items()):
            dropped.add_metric([reason], n)
        yield dropped
        yield CounterMetricFamily(
            "svc_cors_preflights",
            "CORS preflight requests answered.",
            value=getattr(self.state, "preflights", 0),
        )
        yield GaugeMetricFamily(
            "svc_live_sessions", "Derived sessions held in memory.", value=pipeline["liveSessions"]
        )
        yield GaugeMetricFamily(
            "svc_remembered_event_ids",
            "eventIds remembered for deduplication.",
            value=pipeline["rememberedEventIds"],
        )

    def _edge(self) -> Iterator[Metric]:
        edge = getattr(self.state, "edge_auth", None)  # svc.http.edge_auth (svcm serve)
        if edge is None:
            return
        signed = CounterMetricFamily(
            "svc_edge_signed_requests",
            "POST /analytics with signed edge headers, by result: verified, refused (ignored: "
            "unknown secret, bad signature or time, body over the limit), out_of_scope "
            "(ignored: the key's project is not in the secret's scope), replayed (answered "
            "409: the same signed request again within its window).",
            labels=["result"],
        )
        signed.add_metric(["verified"], edge.verified)
        signed.add_metric(["refused"], edge.refused - edge.out_of_scope)
        signed.add_metric(["out_of_scope"], edge.out_of_scope)
        signed.add_metric(["replayed"], edge.replayed)
        yield signed

    def _spool_and_loader(self, report: dict[str, Any]) -> Iterator[Metric]:
        pipeline = report["pipeline"]
        runtime = self.runtime
        loader, spool = runtime.loader, runtime.spool
        yield GaugeMetricFamily(
            "svc_ready",
            "1 while events are accepted (GET /health answers 200), else 0.",
            value=1 if report["ready"] else 0,
        )
        yield GaugeMetricFamily(
            "svc_spool_backlog_events",
            "Events on disk not yet in the event store.",
            value=loader.backlog_events,
        )
        yield GaugeMetricFamily(
            "svc_spool_backlog_bytes",
            "Bytes of events on disk not yet in the event store.",
            value=loader.backlog_bytes,
        )
        yield GaugeMetricFamily(
            "svc_spool_backlog_limit_bytes",
            "SVC_SPOOL_MAX_BACKLOG_BYTES: past it, ingestion answers 503.",
            value=runtime.settings.spool_max_backlog_bytes,
        )
        yield GaugeMetricFamily(
            "svc_spool_backlog_segments",
            "Closed spool segments waiting for the loader.",
            value=len(spool.ready),
        )
        oldest = loader.oldest_waiting_ms
        now = now_ms()
        yield GaugeMetricFamily(
            "svc_spool_oldest_waiting_seconds",
            "Age of the oldest event not yet in the event store (0: none waits).",
            value=max(0, now - oldest) / 1000 if oldest else 0.0,
        )
        yield GaugeMetricFamily(
            "svc_spool_failing",
            "1 when the spool's last write or fsync failed (ingestion answers 503).",
            value=1 if spool.last_error else 0,
        )
        yield CounterMetricFamily(
            "svc_spool_commits", "Group commits (one fdatasync each).", value=spool.commits
        )
        yield CounterMetricFamily(
            "svc_spool_torn_tails_cut",
            "Torn records cut from the end of a segment at start-up (a crash mid-write).",
            value=spool.torn_tails_cut,
        )
        yield GaugeMetricFamily(
            "svc_loader_lag_seconds",
            "How far the event store is behind: every event received more than this long ago "
            "is in it (the oldest in a request on its way to disk or in the spool).",
            value=max(0, now - runtime.loaded_through_ms()) / 1000,
        )
        yield CounterMetricFamily(
            "svc_loader_loaded_events",
            "Events loaded into the event store.",
            value=loader.loaded_events,
        )
        yield CounterMetricFamily(
            "svc_loader_loaded_segments",
            "Spool segments loaded into the event store.",
            value=loader.loaded_segments,
        )
        yield GaugeMetricFamily(
            "svc_loader_last_load_duration_seconds",
            "Time the last segment took to load.",
            value=(loader.last_load_ms or 0.0) / 1000,
        )
        yield GaugeMetricFamily(
            "svc_loader_failing",
            "1 while the loader cannot load (its last try failed: the store is down or "
            "refuses), else 0. The events wait in the spool.",
            value=1 if loader.last_error else 0,
        )
        yield GaugeMetricFamily(
            "svc_loader_last_error_timestamp_seconds",
            "When the loader last failed (Unix time; 0: never).",
            value=loader.last_error_at or 0.0,
        )
        yield GaugeMetricFamily(
            "svc_quarantined_records",
            "Records the store refused, kept in the spool's quarantine/ (see svcm).",
            value=pipeline["quarantinedRecords"],
        )
        yield GaugeMetricFamily(
            "svc_quarantined_bytes",
            "Bytes in the spool's quarantine/.",
            value=pipeline["quarantinedBytes"],
        )

    def _rollups(self) -> Iterator[Metric]:
        runtime = self.runtime
        duration = SummaryMetricFamily(
            "svc_rollup_duration_seconds",
            "Passes that bring the daily rollups up to date (every SVC_ROLLUP_INTERVAL_SECONDS, "
            "but those skipped: nothing written since the last).",
        )
        duration.add_metric(
            [],
            count_value=getattr(runtime, "rollup_runs", 0),
            sum_value=getattr(runtime, "rollup_seconds_total", 0.0),
        )
        yield duration
        yield GaugeMetricFamily(
            "svc_rollup_last_duration_seconds",
            "Time the last rollup pass took.",
            value=getattr(runtime, "rollup_last_seconds", 0.0),
        )
        yield GaugeMetricFamily(
            "svc_rollup_last_lock_seconds",
            "How long the last day's rollup held the store's write lock (the loader waited).",
            value=runtime.rollups.last_lock_seconds,
        )
        yield CounterMetricFamily(
            "svc_rollup_failures",
            "Rollup passes that failed (the store is down; tried again later).",
            value=getattr(runtime, "rollup_failures", 0),
        )
        yield CounterMetricFamily(
            "svc_rollup_computations",
            "Days whose rollups were computed (a day again when late events changed it).",
            value=runtime.rollups.days_computed,
        )
        yield CounterMetricFamily(
            "svc_snapshots_taken",
            "Snapshots taken of days not rolled up yet (svc.storage.snapshots).",
            value=runtime.snapshots.taken,
        )
        yield from self._retention()

    def _retention(self) -> Iterator[Metric]:
        """The retention job's figures (svc.retention.job), after each rollup pass."""
        job = getattr(self.runtime, "retention", None)
        if job is None:
            return
        yield CounterMetricFamily(
            "svc_retention_runs", "Runs of the retention job that ended.", value=job.runs
        )
        yield CounterMetricFamily(
            "svc_retention_failures",
            "Runs of the retention job that failed (tried again a SVC_RETENTION_INTERVAL_SECONDS "
            "later; the log says why).",
            value=job.failures,
        )
        yield GaugeMetricFamily(
            "svc_retention_last_success_timestamp_seconds",
            "When the retention job last ended well (Unix time; 0: not yet).",
            value=job.last_success_at,
        )
        yield GaugeMetricFamily(
            "svc_retention_last_duration_seconds",
            "Time the retention job's last run took.",
            value=job.last_seconds,
        )
        yield CounterMetricFamily(
            "svc_retention_partitions_dropped",
            "Month partitions the retention job dropped whole.",
            value=job.partitions_dropped,
        )
        yield CounterMetricFamily(
            "svc_retention_deletes",
            "Deletes (mutations) of a project's rows past its retention, per table.",
            value=job.deletes,
        )
        yield CounterMetricFamily(
            "svc_retention_lake_days_deleted",
            "Days of a project deleted from the raw-event lake past its retention.",
            value=job.lake_days_deleted,
        )

    def _operations(self) -> Iterator[Metric]:
        """The lake's and the scheduled backups' figures, when they are on (svc.lake,
        svc.backup.schedule)."""
        operations = getattr(self.state, "operations", None)
        lake = getattr(operations, "lake", None)
        if lake is not None:
            yield CounterMetricFamily(
                "svc_lake_days_written",
                "Days written to the raw-event lake (a day again when late events changed it).",
                value=lake.days_written,
            )
            yield CounterMetricFamily(
                "svc_lake_failures",
                "Days the lake could not write, or passes that failed (tried again later).",
                value=lake.failures,
            )
            last_day = lake.last_day_written
            yield GaugeMetricFamily(
                "svc_lake_last_day_timestamp_seconds",
                "Start (UTC) of the newest day written to the lake (0: none yet).",
                value=_day_start(last_day) if last_day else 0,
            )
            yield GaugeMetricFamily(
                "svc_lake_last_pass_timestamp_seconds",
                "When the lake's last pass ended (0: none yet).",
                value=lake.last_pass_at or 0,
            )
        backups = getattr(operations, "backups", None)
        if backups is not None:
            yield CounterMetricFamily(
                "svc_backups_taken",
                "Scheduled backups taken (SVC_BACKUP_SCHEDULE).",
                value=backups.taken,
            )
            yield CounterMetricFamily(
                "svc_backup_failures",
                "Scheduled backups that failed (tried again at the next time).",
                value=backups.failures,
            )
            yield GaugeMetricFamily(
                "svc_backup_last_success_timestamp_seconds",
                "When the last scheduled backup was taken (0: none since start).",
                value=backups.last_success_at or 0,
            )

    def _limits(self) -> Iterator[Metric]:
        limits = getattr(self.state, "limits", None)
        if limits is None:
            return
        limited = CounterMetricFamily(
            "svc_rate_limited_requests",
            "Requests refused 429 rate_limited, by rule (ingest_ip, ingest_project, read_key, "
            "manage_credential, auth_failures_ip).",
            labels=["rule"],
        )
        for rule, buckets in sorted(limits.buckets.items()):
            limited.add_metric([rule], buckets.denied)
        yield limited
        yield CounterMetricFamily(
            "svc_quota_refused_requests",
            "POST /analytics refused 429 quota_exceeded before their body was read (events "
            'refused in the body: svc_ingest_events_rejected_total{code="quota_exceeded"}).',
            value=limits.quotas.refused_requests,
        )
        cut = CounterMetricFamily(
            "svc_client_timeouts",
            "Connections cut off for sending a request too slowly, by phase.",
            labels=["phase"],
        )
        counts = {"headers": 0, "body": 0, **timeouts.COUNTS}
        for phase, n in sorted(counts.items()):
            cut.add_metric([phase], n)
        yield cut

    def _stores(self, report: dict[str, Any]) -> Iterator[Metric]:
        for name, section, what in (
            ("store", report["store"], "event store"),
            ("metadata", report["metadata"], "metadata store"),
        ):
            yield GaugeMetricFamily(
                f"svc_{name}_up",
                f"1 when the {what} answered this scrape's probe, else 0.",
                value=1 if section["reachable"] else 0,
            )
            latency = section.get("latencyMs")
            yield GaugeMetricFamily(
                f"svc_{name}_probe_seconds",
                f"Time the {what} took to answer this scrape's probe (or to fail it).",
                value=(latency or 0.0) / 1000,
            )
        memo = self.runtime.store.memo
        reads = CounterMetricFamily(
            "svc_read_memo_reads",
            "Reads of the facts a report needs first (svc.storage.memo): served from the memo "
            "(nothing written since they were read) or from the store.",
            labels=["served"],
        )
        reads.add_metric(["memo"], memo.hits)
        reads.add_metric(["store"], memo.misses)
        yield reads
        yield GaugeMetricFamily(
            "svc_metadata_lost",
            "1 when the metadata database's file was deleted or replaced under the running "
            "service (metadata writes answer 503 until it is restored and svc restarted).",
            value=1 if report["metadata"].get("lost") else 0,
        )

    def _node(self, report: dict[str, Any]) -> Iterator[Metric]:
        node = report["node"]
        info = GaugeMetricFamily(
            "svc_build_info",
            "The node: version, id, kinds of event store and metadata store (always 1).",
            labels=["version", "node", "store", "metadata"],
        )
        info.add_metric(
            [__version__, node["id"], report["store"]["kind"], report["metadata"]["kind"]], 1
        )
        yield info
        yield GaugeMetricFamily(
            "svc_process_max_resident_memory_bytes",
            "Peak resident memory of the process.",
            value=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        )
        yield GaugeMetricFamily(
            "svc_uptime_seconds",
            "Seconds since the service started.",
            value=time.time() - self.runtime.started_at,
        )
        leases = node.get("leases") or {}
        held = GaugeMetricFamily(
            "svc_job_lease_held",
            "1 for each background job whose lease this node holds, 0 for the others "
            "(one node: it runs them all).",
            labels=["job"],
        )
        if leases.get("enabled"):  # several nodes (svc.cluster.leases)
            for lease in leases.get("leases", []):
                held.add_metric([lease["job"]], 1 if lease["heldHere"] else 0)
        else:
            for job in JOBS:
                held.add_metric([job], 1)
        yield held
        shared = node.get("shared")
        yield CounterMetricFamily(
            "svc_shared_state_fallbacks",
            "Requests whose sessions and event ids this node assigned alone: Redis was out "
            "of reach (exact for this node only). 0 without several nodes.",
            value=0 if shared is None else shared["fallbacks"],
        )


def _day_start(day: str) -> float:
    """The Unix time of a day's (YYYY-MM-DD) UTC midnight."""
    from datetime import UTC, datetime

    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
