"""What the pipeline dropped, per project: counts per UTC day and reason, and a few samples.

Every event the pipeline drops on purpose (:class:`~svc.ingestion.outcomes.DropReason`: a bot's
user agent, an excluded address, path or host name, a repeated ``eventId``) is counted here
per (project, UTC day of its receipt, reason), in memory, on the event loop; the runtime's
housekeeping takes what was counted every ``SVC_HOUSEKEEPING_INTERVAL_SECONDS`` and records
it in the metadata store (:mod:`svc.meta.dropped`), as it records usage.

A few of the dropped requests are kept as samples, so that an owner can see why: at most
:data:`SAMPLES_PER_REASON` per (project, day, reason) and :data:`SAMPLES_PER_DAY` per
(project, day), the first ones of the day (the store enforces the same bounds across
processes and restarts). A sample holds the time, the reason, the user agent cut to
:data:`USER_AGENT_CHARS` characters, the page's path (no query), the referrer's host and the
country when known; never the address, neither the request's nor one a server-side sender
passed on.

Requests to POST /analytics refused whole with 429 before the pipeline
(:class:`~svc.ingestion.outcomes.Refusal`: a rate limit, the monthly quota) are counted here
too, per (project, UTC day, refusal), as requests (their bodies are not read), in the same
store under the refusal's name; no sample is taken of them.

Cost: an accepted event pays nothing (this module runs only for a dropped event). A dropped
event pays one counter increment and two look-ups of its sample bounds; a sampled one, at
most :data:`SAMPLES_PER_DAY` per project and day, also the source and location steps. A
refused request pays one counter increment.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final

from svc.ingestion.outcomes import DropReason, Refusal
from svc.meta.dropped import (
    SAMPLES_PER_DAY,
    SAMPLES_PER_REASON,
    USER_AGENT_CHARS,
    DroppedSample,
    Slot,
)
from svc.timeutil import day_of

if TYPE_CHECKING:
    from svc.ingestion.pipeline import EventDraft, Pipeline

__all__ = ["REASONS", "REFUSALS", "DropCounts"]

#: Every reason the pipeline drops an event for, in the order the answers list them.
REASONS: Final = tuple(r.value for r in DropReason)
#: Every reason a whole request is refused for before the pipeline (counted in requests).
REFUSALS: Final = tuple(r.value for r in Refusal)

_DAY_MS: Final = 86_400_000


class DropCounts:
    """This process's drops not recorded yet, and the samples taken per day.

    :meth:`add` runs on the event loop for each dropped event; :meth:`take` hands what was
    counted since the last take to the recorder (and forgets it); :meth:`give_back` returns
    it when it could not be recorded, so that the next take has it again."""

    def __init__(self) -> None:
        # (project, day, reason) -> [dropped since the last take, samples taken that day]:
        # one look-up a drop. A slot whose day is full of samples has SAMPLES_PER_REASON
        # taken, so that it never looks further.
        self._slots: dict[tuple[str, str, DropReason], list[int]] = {}
        self._taken_day: Counter[tuple[str, str]] = Counter()  # samples per (project, day)
        self._returned: Counter[Slot] = Counter()  # given back, not recorded yet
        self._refused: Counter[Slot] = Counter()  # requests refused (Refusal) per day
        self.samples: list[DroppedSample] = []
        # the UTC day of the last drop, its first ms and the next day's
        self._day, self._start, self._end = "", 0, 0

    @property
    def counts(self) -> dict[Slot, int]:
        """What :meth:`take` would hand out now (a copy)."""
        out = Counter(self._returned)
        out.update(self._refused)
        for (project_id, day, reason), entry in self._slots.items():
            if entry[0]:
                out[(project_id, day, reason.value)] += entry[0]
        return dict(out)

    def _day_of(self, ms: int) -> str:
        if not self._start <= ms < self._end:
            self._start = ms - ms % _DAY_MS
            self._end = self._start + _DAY_MS
            self._day = day_of(ms)
        return self._day

    def refuse(self, project_id: str, refusal: Refusal, ms: int) -> None:
        """Count one request of ``project_id`` refused for ``refusal`` at ``ms`` (its UTC
        day). One counter increment: a refused flood costs no more."""
        self._refused[(project_id, self._day_of(ms), refusal.value)] += 1

    def add(self, draft: EventDraft, reason: DropReason, pipeline: Pipeline) -> None:
        """Count ``draft``, dropped for ``reason``, and keep it as a sample while its project,
        day and reason have room for one. Taking a sample runs the pipeline's source and
        location steps on the draft (those after the one that dropped it), for its referrer
        host and country."""
        ctx = draft.ctx
        slot = (ctx.project.id, self._day_of(ctx.received_ms), reason)
        entry = self._slots.get(slot)
        if entry is None:
            entry = self._slots[slot] = [0, 0]
        entry[0] += 1
        if entry[1] < SAMPLES_PER_REASON:
            self._sample(draft, slot, entry, pipeline)

    def _sample(
        self,
        draft: EventDraft,
        slot: tuple[str, str, DropReason],
        entry: list[int],
        pipeline: Pipeline,
    ) -> None:
        project_id, day, reason = slot
        per_day = (project_id, day)
        if self._taken_day[per_day] >= SAMPLES_PER_DAY:
            entry[1] = SAMPLES_PER_REASON  # the day is full: look no further
            return
        entry[1] += 1
        self._taken_day[per_day] += 1
        pipeline.attribute_source(draft)
        pipeline.locate(draft)
        self.samples.append(
            DroppedSample(
                project_id=project_id,
                day=day,
                at_ms=draft.ctx.received_ms,
                reason=reason.value,
                user_agent=draft.user_agent[:USER_AGENT_CHARS],
                path=draft.page.path,
                referrer_host=draft.referrer_host,
                country=draft.geo.country,
            )
        )

    def take(self) -> tuple[dict[Slot, int], list[DroppedSample]]:
        """What was counted and sampled since the last take; forgotten here. The slots of
        past days go once their counts are taken (their samples were taken then)."""
        counts = self._returned
        counts.update(self._refused)
        self._returned, self._refused = Counter(), Counter()
        for slot, entry in list(self._slots.items()):
            project_id, day, reason = slot
            if entry[0]:
                counts[(project_id, day, reason.value)] += entry[0]
                entry[0] = 0
            elif day != self._day:
                del self._slots[slot]
                self._taken_day.pop((project_id, day), None)
        samples, self.samples = self.samples, []
        return dict(counts), samples

    def give_back(self, counts: dict[Slot, int], samples: list[DroppedSample]) -> None:
        """Return what :meth:`take` handed out and could not be recorded."""
        self._returned.update(counts)
        self.samples[:0] = samples

    def forget_project(self, project_id: str) -> None:
        """Forget a deleted project's counts and samples, recorded or not."""
        for slot in [s for s in self._slots if s[0] == project_id]:
            del self._slots[slot]
        for key in [k for k in self._taken_day if k[0] == project_id]:
            del self._taken_day[key]
        for returned in [s for s in self._returned if s[0] == project_id]:
            del self._returned[returned]
        for refused in [s for s in self._refused if s[0] == project_id]:
            del self._refused[refused]
        self.samples = [s for s in self.samples if s.project_id != project_id]
