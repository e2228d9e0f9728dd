"""The ingestion service: the one domain function behind POST /analytics.

``ingest`` validates every event of a body, runs each valid one through the pipeline, checks
the project's monthly quota, appends the rows to the spool (group commit) and returns what
happened to each event. It returns only once the accepted events are durable.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from svc.errors import ApiError, Forbidden, InvalidApiKey, InvalidRequest, Unavailable
from svc.ingestion import identity
from svc.ingestion.dedup import EventIdFilter
from svc.ingestion.dropped import DropCounts
from svc.ingestion.enrich.datacentres import load_ranges
from svc.ingestion.enrich.geo import GeoLookup
from svc.ingestion.outcomes import DropReason, Outcomes, Refusal
from svc.ingestion.pipeline import EventDraft, Pipeline, RequestContext
from svc.ingestion.shared_identity import PendingElsewhere, identify_all
from svc.ingestion.wire import decode_body, decode_valid, validate_event
from svc.limits.plans import parse_plans
from svc.limits.quota import Quotas
from svc.meta.store import Project
from svc.settings import Settings
from svc.spool.log import Spool, SpoolUnavailable
from svc.storage.events import EventRow
from svc.timeutil import month_of

if TYPE_CHECKING:
    from svc.cluster.shared import SharedIdentity

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()


@dataclass(slots=True)
class IngestResult:
    """What happened to a request's events."""

    received_ms: int
    is_batch: bool
    accepted: int = 0
    dropped: list[DropReason] = field(default_factory=list)
    rejected: list[tuple[int, ApiError]] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": True, "ts": self.received_ms}
        if self.is_batch:
            out["accepted"] = self.accepted
            if self.dropped:
                out["dropped"] = len(self.dropped)
            if self.rejected:
                out["rejected"] = self.rejected_json()
        return out

    def rejected_json(self) -> list[dict[str, Any]]:
        """``[{"index": i, "error": {...}}]`` of the events refused."""
        return [{"index": i, "error": e.detail()} for i, e in self.rejected]


class Usage:
    """Events stored per (project, UTC month): seeded from the store and spool at start-up,
    counted exactly in memory after that."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def of(self, project_id: str, month: str) -> int:
        return self.counts[(project_id, month)]

    def add(self, project_id: str, month: str, n: int) -> None:
        self.counts[(project_id, month)] += n


class IngestService:
    def __init__(self, settings: Settings, spool: Spool, pipeline: Pipeline) -> None:
        self.settings = settings
        self.spool = spool
        self.pipeline = pipeline
        self.outcomes = Outcomes()
        # drops per project, day and reason, and samples (svc.ingestion.dropped)
        self.drops = DropCounts()
        self.usage = Usage()
        # Exact monthly quotas (svc.limits); the app swaps in the Redis ledger when shared.
        self.quotas = Quotas(parse_plans(settings.plans, settings.monthly_quota), self.usage)
        # The UTC month of the last request and the span of ms it covers.
        self._month = ("", 0, 0)
        # Projects being deleted (by id) and deleted (by id and creation time): their events
        # are refused, so none reaches the spool after its purge began (see Runtime).
        self.closing: set[str] = set()
        self.deleted: set[tuple[str, int]] = set()
        # Receipt times of the requests between their start and their answer, by request.
        self._in_flight: dict[int, int] = {}
        self._request_seq = 0
        #: Event ids and sessions in Redis, shared by several nodes (svc.cluster.shared);
        #: None: this process's own (the runtime sets it).
        self.shared: SharedIdentity | None = None

    def oldest_in_flight_ms(self) -> int | None:
        """The receipt time of the oldest request not answered yet (its events may be on
        their way to the spool)."""
        return min(self._in_flight.values(), default=None)

    def gone(self, project: Project) -> bool:
        """Whether ``project`` is being deleted or was (a request that authenticated before)."""
        return project.id in self.closing or (project.id, project.created_at) in self.deleted

    def forget_project(self, project: Project) -> None:
        """Forget a deleted project's in-memory state: its live sessions, remembered event
        ids and counts; a new project of the same id starts from nothing."""
        self.deleted.add((project.id, project.created_at))
        self.pipeline.sessions.forget_project(project.id)
        self.pipeline.event_ids.forget_project(project.id)
        for key in [k for k in self.usage.counts if k[0] == project.id]:
            del self.usage.counts[key]
        self.quotas.attention.pop(project.id, None)
        self.quotas.quota_seen.pop(project.id, None)
        self.drops.forget_project(project.id)

    def _month_of(self, ms: int) -> str:
        month, start, end = self._month
        if start <= ms < end:
            return month
        month = month_of(ms)
        start, end = _month_span(ms)
        self._month = (month, start, end)
        return month

    @classmethod
    def build(cls, settings: Settings, spool: Spool, salts: identity.Salts) -> IngestService:
        pipeline = Pipeline(
            salts=salts,
            sessions=identity.SessionTracker(settings.session_timeout_minutes * 60_000),
            event_ids=EventIdFilter(settings.event_id_window_hours * 3_600_000),
            geo=GeoLookup(),
            # read once, here: a bad file refuses the start (RangesFileError, a ValueError)
            data_centres=load_ranges(settings.datacentre_ranges)
            if settings.datacentre_ranges
            else None,
        )
        return cls(settings, spool, pipeline)

    def quota_of(self, project_plan: str) -> int:
        return self.quotas.plans.quota(project_plan)

    async def ingest(self, ctx: RequestContext, body: bytes) -> IngestResult:
        """Store what is valid in ``body``; raises :class:`ApiError` for a whole-request error."""
        self._request_seq += 1
        request = self._request_seq
        self._in_flight[request] = ctx.received_ms
        try:
            return await self._ingest(ctx, body)
        finally:
            del self._in_flight[request]

    async def _ingest(self, ctx: RequestContext, body: bytes) -> IngestResult:
        if self.gone(ctx.project):
            raise InvalidApiKey("the project of this key was deleted", field="api_key")
        valid = decode_valid(body, self.settings.max_batch_events, ctx.received_ms)
        decoded = valid or decode_body(body, self.settings.max_batch_events)
        result = IngestResult(ctx.received_ms, decoded.is_batch)
        project = ctx.project
        month = self._month_of(ctx.received_ms)
        # Reserve room before any await: concurrent requests never store past the quota.
        quota_left = await self.quotas.reserve(project, month, len(decoded.events))
        rows: list[EventRow] = []
        dedup_keys: list[int] = []
        pipeline = self.pipeline
        shared = self.shared
        pending: list[EventDraft] = []  # for the shared steps (svc.ingestion.shared_identity)
        over_quota = False
        for index, obj in enumerate(decoded.events):
            try:
                raw = obj if valid is not None else validate_event(obj, ctx.received_ms)
                if raw.project_id is not None and raw.project_id != project.id:
                    raise Forbidden(
                        f"`projectId` {raw.project_id!r} is not the project of this key",
                        field="projectId",
                    )
                if quota_left <= 0:
                    raise self.quotas.exceeded(project, ctx.received_ms)
            except ApiError as exc:
                if exc.code == "quota_exceeded" and not over_quota:
                    # a request refused (wholly or in part) over the quota: counted once
                    over_quota = True
                    self.drops.refuse(project.id, Refusal.QUOTA, ctx.received_ms)
                if not decoded.is_batch:
                    self.outcomes.rejected[exc.code] += 1
                    await self.quotas.release(project.id, month, quota_left)
                    raise
                self.outcomes.rejected[exc.code] += 1
                result.rejected.append((index, exc))
                continue
            draft = pipeline.draft(raw, ctx)
            reason = pipeline.run(draft) if shared is None else pipeline.run_local(draft)
            if reason is not None:
                self._dropped(result, draft, reason)
                continue
            if shared is not None:
                pending.append(draft)
            else:
                if draft.dedup_key is not None:
                    dedup_keys.append(draft.dedup_key)
                rows.append(draft.to_row())
            quota_left -= 1
        shared_ids: list[str] = []  # the event ids reserved in Redis
        if pending:
            assert shared is not None
            try:
                reasons = await identify_all(pipeline, shared, pending)
            except PendingElsewhere:
                await self.quotas.release(project.id, month, quota_left + len(pending))
                raise Unavailable(
                    "an eventId of this request is being stored by another request; retry "
                    "in a few seconds (the copy that is stored first counts, once)",
                    headers={"Retry-After": "2"},
                ) from None
            for draft, reason in zip(pending, reasons, strict=True):
                if reason is not None:
                    self._dropped(result, draft, reason)
                    quota_left += 1
                    continue
                if draft.dedup_key is not None:
                    dedup_keys.append(draft.dedup_key)
                elif draft.raw.event_id:  # reserved in Redis (else by drop_duplicates)
                    shared_ids.append(draft.raw.event_id)
                rows.append(draft.to_row())
        await self.quotas.release(project.id, month, quota_left)  # reserved, not stored
        if decoded.is_batch and not rows and not result.dropped and result.rejected:
            first = result.rejected[0][1]
            raise _BatchRejected(first, result)
        if rows:
            try:
                if self.gone(project):  # deleted while this request was on its way
                    raise InvalidApiKey("the project of this key was deleted", field="api_key")
                # JSONEachRow: one line per row, each ending in a newline.
                await self.spool.append(_encoder.encode_lines(rows), len(rows), ctx.received_ms)
            except (SpoolUnavailable, InvalidApiKey, asyncio.CancelledError) as exc:
                self.pipeline.event_ids.release(dedup_keys)
                if shared is not None and shared_ids:
                    await asyncio.shield(shared.release(project.id, shared_ids))
                await self.quotas.release(project.id, month, len(rows))
                if isinstance(exc, asyncio.CancelledError | InvalidApiKey):
                    raise
                raise Unavailable(
                    "events cannot be stored right now; retry later",
                    headers={"Retry-After": "5"},
                ) from exc
            if shared is not None and shared_ids:  # stored: duplicates from now on
                await shared.confirm(project.id, shared_ids)
            n = len(rows)
            result.accepted = n
            self.outcomes.accepted += n
        return result

    def _dropped(self, result: IngestResult, draft: EventDraft, reason: DropReason) -> None:
        self.outcomes.dropped[reason] += 1
        result.dropped.append(reason)
        self.drops.add(draft, reason, self.pipeline)


class _BatchRejected(ApiError):
    """A batch none of whose events was valid: the first error's status, with every error."""

    def __init__(self, first: ApiError, result: IngestResult) -> None:
        super().__init__(
            f"no event of the batch was accepted: {first.message}",
            status=first.status,
            code=first.code,
            headers=first.headers,
        )
        self.result = result

    def body(self) -> dict[str, Any]:
        out = super().body()
        out["accepted"] = 0
        out["rejected"] = self.result.rejected_json()
        return out


def _month_span(ms: int) -> tuple[int, int]:
    """First ms of the UTC month of ``ms`` and first ms of the next."""
    from datetime import UTC, datetime

    now = datetime.fromtimestamp(ms / 1000, UTC)
    first = datetime(now.year, now.month, 1, tzinfo=UTC)
    nxt = datetime(now.year + (now.month == 12), now.month % 12 + 1, 1, tzinfo=UTC)
    return int(first.timestamp() * 1000), int(nxt.timestamp() * 1000)


__all__ = ["IngestResult", "IngestService", "InvalidRequest"]
