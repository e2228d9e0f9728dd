"""The scheduler of email reports (and of traffic alerts, :mod:`svc.mail.alerts`).

Every minute (and at once when a subscription is added), for each report subscription: the
last period of its kind that has ended in the project's time zone; when the subscription has
not had it yet and every event received before the period's end is in the store, the report is
computed (once per project and period, whoever the recipients) and one mail per recipient is
enqueued, with the dedupe key ``report:<project>:<period>:<email>`` so that it is enqueued
once however often this runs, on however many processes. A new subscription gets the last
complete period's report at once, then each later one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime
from urllib.parse import quote

from svc.mail import links, subscriptions
from svc.mail import report as reports
from svc.mail.outbox import enqueue
from svc.mail.periods import REPORT_KINDS, Period, last_complete
from svc.meta.store import MetaStore, Project
from svc.saved import funnels as saved_funnels
from svc.saved import goals as saved_goals
from svc.settings import Settings
from svc.storage.events import EventStore

log = logging.getLogger(__name__)


def base_url(settings: Settings) -> str:
    """Where links in mail point: ``SVC_BASE_URL`` (:func:`svc.mail.links.public_base`;
    :class:`~svc.mail.links.NoBaseUrl` when it is not set)."""
    return links.public_base(settings)


def unsubscribe_url(settings: Settings, token: str) -> str:
    return f"{base_url(settings)}/unsubscribe/{quote(token)}"


def list_headers(unsubscribe: str) -> dict[str, str]:
    """The headers of a mail to a subscriber: one-click unsubscribe (RFC 8058: the client POSTs
    to the link, which unsubscribes), and that it was sent by a machine (RFC 3834)."""
    return {
        "List-Unsubscribe": f"<{unsubscribe}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        "Auto-Submitted": "auto-generated",
    }


def send_reports(
    settings: Settings,
    meta: MetaStore,
    store: EventStore,
    now: datetime,
    loaded_through_ms: int,
    raw_from: RawFrom | None = None,
) -> int:
    """Enqueue the reports that are due (blocking); return how many mails were enqueued.
    ``raw_from``: where a project's raw events begin (svc.retention), as the API reads it.
    Without ``SVC_BASE_URL`` none is (a report carries links): they stay due, and go once it
    is set."""
    if not settings.base_url:
        return 0
    subs = subscriptions.list_subscriptions(meta, kinds=REPORT_KINDS)
    projects: dict[str, Project | None] = {}
    computed: dict[tuple[str, str], reports.Report] = {}
    sent = 0
    for sub in subs:
        if sub.project_id not in projects:
            projects[sub.project_id] = meta.find_project(sub.project_id)
        project = projects[sub.project_id]
        if project is None:
            continue
        period = last_complete(sub.kind, project.timezone, now)
        if sub.last_period == period.key:
            continue
        if period.rng.end_utc.timestamp() * 1000 > loaded_through_ms:
            continue  # events of the period may still be on their way to the store
        try:
            report = computed.get((project.id, period.key))
            if report is None:
                first_raw = raw_from(project) if raw_from is not None else None
                report = computed[(project.id, period.key)] = reports.compute(
                    store,
                    project,
                    period,
                    first_raw,
                    saved_goals.list_goals(meta, project.id),
                    saved_funnels.list_funnels(meta, project.id),
                )
            sent += _enqueue_report(settings, meta, sub, report, period)
        except Exception:
            log.exception("report %s of %s for %s", period.key, project.id, sub.email)
            continue
        subscriptions.mark_period(meta, sub.id, period.key)
    return sent


def _enqueue_report(
    settings: Settings,
    meta: MetaStore,
    sub: subscriptions.Subscription,
    report: reports.Report,
    period: Period,
) -> int:
    subject, text, html, attachments = reports.render(
        report, base_url(settings), unsubscribe_url(settings, sub.token)
    )
    enqueue(
        meta,
        sub.email,
        subject,
        text,
        html,
        attachments,
        kind="report",
        dedupe_key=f"report:{report.project.id}:{period.key}:{sub.email}",
        headers=list_headers(unsubscribe_url(settings, sub.token)),
    )
    return 1


def utc_now() -> datetime:
    return datetime.now(UTC)


Clock = Callable[[], datetime]
RawFrom = Callable[[Project], date | None]
