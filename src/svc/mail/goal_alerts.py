"""Goal alerts: each saved goal of a project watched hour by hour, as visitors are.

The rule (docs/api.md, "Email reports and alerts") is that of traffic alerts
(:mod:`svc.mail.alerts`) over a goal's **conversions**, its converting visitors in the hour
as GET /metrics/goals counts them for that hour (:func:`svc.saved.goals.hourly_conversions`,
one statement for every goal and hour): the baseline is the mean of the same local hour on
each of the ``baselineDays`` days before (:func:`~svc.mail.alert_rule.compared_hours`), and with
the project's ``alerts`` thresholds a goal

- **spiked** when conversions ≥ ``spikeFactor`` × baseline and conversions ≥ ``minVisitors``;
- **dropped** when conversions ≤ ``dropFactor`` × baseline and baseline ≥ ``minVisitors``.

A goal that fires gets its own mail ("Signups dropped: 0 in 14:00–15:00 UTC, usually 12"),
sent to the ``alerts`` subscriptions with the dedupe key
``alert:<project>:<hour>:goal:<goal id>:<email>``: at most one per goal and hour. The hour's
goals are looked at once per project, whatever the nodes and runs (the column
``goals_checked_hour`` of ``mail_alert_state``, claimed by a conditional update).
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from sqlalchemy import or_, update

from svc.mail.alert_rule import compared_hours, direction, thresholds
from svc.mail.outbox import enqueue
from svc.mail.scheduler import base_url, list_headers, unsubscribe_url
from svc.mail.subscriptions import Subscription
from svc.meta import tables
from svc.meta.store import MetaStore, Project
from svc.saved.goals import Goal, hourly_conversions
from svc.settings import Settings
from svc.storage.events import EventStore

log = logging.getLogger(__name__)
_state = tables.mail_alert_state


@dataclass(frozen=True)
class GoalFigure:
    """A saved goal's conversions in an hour and its baseline (the mean over ``days``)."""

    goal: Goal
    conversions: int
    baseline: float

    @property
    def delta(self) -> float:
        return self.conversions - self.baseline


@dataclass(frozen=True)
class GoalAlert:
    project: Project
    hour: datetime  # UTC, its start
    direction: str  # spike, drop
    figure: GoalFigure
    rule: dict[str, float]
    days: int  # the days the baseline is the mean of


def figures(
    store: EventStore, project: Project, hour: datetime, goals: list[Goal]
) -> list[GoalFigure]:
    """Each goal's conversions in the hour starting at ``hour`` (aware) and its baseline, in
    the order given (blocking; one statement)."""
    rule = thresholds(project)
    hour = hour.astimezone(UTC)
    earlier = compared_hours(hour, project.timezone, int(rule["baselineDays"]))
    days = max(1, len(earlier))
    found = hourly_conversions(store, project.id, goals, [hour, *earlier])
    return [
        GoalFigure(g, found[g.id][hour], sum(found[g.id][h] for h in earlier) / days) for g in goals
    ]


def evaluate(project: Project, hour: datetime, found: list[GoalFigure]) -> list[GoalAlert]:
    """The goals of ``found`` (:func:`figures` of ``hour``) that fire, in that order."""
    rule = thresholds(project)
    hour = hour.astimezone(UTC)
    days = max(1, len(compared_hours(hour, project.timezone, int(rule["baselineDays"]))))
    out = []
    for f in found:
        way = direction(rule, f.conversions, f.baseline)
        if way is not None:
            out.append(GoalAlert(project, hour, way, f, rule, days))
    return out


def claim_hour(meta: MetaStore, project_id: str, hour_ms: int) -> bool:
    """Record that this process looks at the saved goals of ``hour_ms`` of the project (its
    row of ``mail_alert_state`` made already, by :func:`svc.mail.alerts.check_all`); False
    when they were looked at already, by this process or another (one conditional update:
    of two at once, one changes the row)."""
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(_state)
            .where(
                _state.c.project_id == project_id,
                or_(_state.c.goals_checked_hour.is_(None), _state.c.goals_checked_hour < hour_ms),
            )
            .values(goals_checked_hour=hour_ms)
        )
        return bool(result.rowcount == 1)


def send(settings: Settings, meta: MetaStore, alert: GoalAlert, subs: list[Subscription]) -> int:
    """Enqueue the goal alert's mail to each of ``subs`` (dedupe key
    ``alert:<project>:<hour>:goal:<goal id>:<email>``); the mails enqueued."""
    project_id, goal_id = alert.project.id, alert.figure.goal.id
    hour_ms = int(alert.hour.timestamp() * 1000)
    log.info("goal alert: %s %s %s at %s", project_id, goal_id, alert.direction, alert.hour)
    for sub in subs:
        unsubscribe = unsubscribe_url(settings, sub.token)
        subject, text, body = render(alert, base_url(settings), unsubscribe)
        enqueue(
            meta,
            sub.email,
            subject,
            text,
            body,
            kind="alert",
            dedupe_key=f"alert:{project_id}:{hour_ms}:goal:{goal_id}:{sub.email}",
            headers=list_headers(unsubscribe),
        )
    return len(subs)


def usual(value: float) -> str:
    """A baseline as a mail writes it: a whole number as such, else one decimal."""
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def render(alert: GoalAlert, base: str, unsubscribe_url: str) -> tuple[str, str, str]:
    """(subject, text, HTML) of a goal alert's mail."""
    p, f = alert.project, alert.figure
    up = alert.direction == "spike"
    zone = ZoneInfo(p.timezone)
    start = alert.hour.astimezone(zone)
    end = (alert.hour + timedelta(hours=1)).astimezone(zone)
    subject = (
        f"{f.goal.name} {'spiked' if up else 'dropped'}: {f.conversions} in "
        f"{start:%H:%M}–{end:%H:%M} {start:%Z}, usually {usual(f.baseline)} ({p.name})"
    )
    when = f"{start:%Y-%m-%d %H:%M}–{end:%H:%M} {start:%Z}"
    minimum = int(alert.rule["minVisitors"])
    why = (
        f"{f.conversions} visitors converted on the goal {f.goal.name} ({f.goal.goal}) "
        f"between {when}, against {f.baseline:.1f} on average in the same hour of the "
        f"{alert.days} days before. The rule: "
        + (
            f"at least {alert.rule['spikeFactor']:g}× that and at least {minimum} conversions."
            if up
            else f"at most {alert.rule['dropFactor']:g}× that, with a usual of at least {minimum}."
        )
    )
    day = start.date().isoformat()
    query = {"project": p.id, "period": "custom", "from": day, "to": day, "interval": "hour"}
    link = f"{base}/dashboard?{urlencode(query)}"
    text = [subject, "", why, "", f"Dashboard: {link}", ""]
    text += [f"Unsubscribe from alerts: {unsubscribe_url}", ""]
    e = html.escape
    body = (
        '<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#0f172a">'
        f"<h2>{e(subject)}</h2><p>{e(why)}</p>"
        f'<p><a href="{e(link)}">Open the dashboard</a></p>'
        f'<p style="color:#64748b;font-size:12px"><a href="{e(unsubscribe_url)}">Unsubscribe'
        "</a> from these alerts.</p></body></html>"
    )
    return subject, "\n".join(text), body


def causes(found: list[GoalFigure], up: bool, top: int = 10) -> list[str]:
    """The lines a traffic alert's mail gives the saved goals: conversions in the hour
    against the baseline, the largest changes in the direction of the alert first (at most
    ``top``)."""
    sign = 1 if up else -1
    ordered = sorted(found, key=lambda f: (-sign * f.delta, f.goal.name))[:top]
    return [f"{f.goal.name}: {f.conversions} vs {f.baseline:.1f} ({f.delta:+.1f})" for f in ordered]
