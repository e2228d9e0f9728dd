"""The ``drop_duplicates`` and ``identify`` steps when several nodes share Redis
(:mod:`svc.cluster.shared`): the other steps run here, event by event; these two run for the
whole request in one Redis script call, with the same rules as the steps of one process
(:class:`svc.ingestion.pipeline.Pipeline`), so that a visitor's events make the same sessions
whichever node each reaches. Redis out of reach: the request runs them with this process's
own state (the pipeline's steps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from svc.ingestion import identity
from svc.ingestion.outcomes import DropReason
from svc.schema.measurements import MEASUREMENTS

if TYPE_CHECKING:
    from svc.cluster.shared import Answer, Ask, SharedIdentity
    from svc.ingestion.pipeline import EventDraft, Pipeline

#: The steps run in Redis.
SHARED_STEPS = frozenset(("drop_duplicates", "identify"))


def ask_of(pipeline: Pipeline, d: EventDraft) -> Ask:
    """What Redis needs of an event that passed the other steps."""
    from svc.cluster.shared import CLIENT, DERIVED, MEASURE_CLIENT, MEASURE_DERIVED, Ask

    ctx = d.ctx
    project_id = ctx.project.id
    now = ctx.received_ms
    salt = pipeline.salts.today(now)
    visitor, ctx.visitor_memo = identity.remembered_visitor_id(
        ctx.visitor_memo, salt, project_id, d.address, d.user_agent
    )
    measurement = d.raw.name in MEASUREMENTS
    client = 0
    before = 0
    if d.raw.session_id:
        client = identity.client_session_id(project_id, d.raw.session_id)
        kind = MEASURE_CLIENT if measurement else CLIENT
    else:
        kind = MEASURE_DERIVED if measurement else DERIVED
        before, ctx.before_memo = identity.remembered_visitor_id(
            ctx.before_memo, pipeline.salts.yesterday(now), project_id, d.address, d.user_agent
        )
    return Ask(kind, d.raw.event_id or "", project_id, visitor, before, d.ts_ms, now, client)


def apply(d: EventDraft, ask: Ask, answer: Answer) -> DropReason | None:
    """Fill the draft's visitor and session from Redis's answer; the reason to drop it."""
    from svc.cluster import shared

    flag = answer.flag
    if flag == shared.DUPLICATE:
        return DropReason.DUPLICATE_EVENT_ID
    if flag == shared.CLIENT_SESSION:
        d.session_id, d.session_start_ms = ask.client_session, answer.start_ms
        person = answer.person if ask.kind == shared.CLIENT else ask.visitor
        d.visitor_id = identity.stored_visitor_id(person, answer.start_ms)
        return None
    visitor = ask.before if flag == shared.YESTERDAY else ask.visitor
    if flag == shared.NONE:  # a measurement without a live session: one of its own
        sid = ask.client_session or identity.derived_session_id(visitor, d.ts_ms)
        d.session_id, d.session_start_ms = sid, d.ts_ms
    else:
        start = answer.start_ms
        d.session_id, d.session_start_ms = identity.derived_session_id(visitor, start), start
    d.visitor_id = identity.stored_visitor_id(visitor, d.session_start_ms)
    return None


class PendingElsewhere(Exception):
    """An event id of the request is reserved by a request not answered yet (maybe on
    another node, maybe one whose node died before storing it): the request is to be
    retried later (503), with nothing of it stored and its own reservations released."""


async def identify_all(
    pipeline: Pipeline, shared: SharedIdentity, drafts: Sequence[EventDraft]
) -> list[DropReason | None]:
    """Run the shared steps for a request's drafts, in order: each one's drop reason."""
    asks = [ask_of(pipeline, d) for d in drafts]
    answers = await shared.assign(asks)
    if answers is None:  # Redis out of reach: this process's own state
        out: list[DropReason | None] = []
        for d in drafts:
            reason = pipeline.drop_duplicates(d)
            out.append(reason if reason is not None else pipeline.identify(d))
        return out
    from svc.cluster.shared import PENDING

    if any(r.flag == PENDING for r in answers):
        mine = [
            a.event_id for a, r in zip(asks, answers, strict=True) if a.event_id and r.flag >= 0
        ]
        if mine:
            await shared.release(drafts[0].ctx.project.id, mine)
        raise PendingElsewhere
    return [apply(d, a, r) for d, a, r in zip(drafts, asks, answers, strict=True)]
