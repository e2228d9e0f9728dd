"""Traffic alerts that explain themselves.

The rule (docs/api.md, "Email reports and alerts"): once the last complete hour of the
project's time zone is in the store, its visitors are compared with the **baseline**, the mean
of the visitors of the same local hour (14:00-15:00 in the zone) on each of the
``baselineDays`` local days before (:func:`compared_hours`: across a change of daylight saving
time that is 23 or 25 hours earlier, not 24; a day whose clocks skipped that hour is left out
of the mean, and of an hour that happened twice the first is taken). The alert fires when

- **spike**: visitors ≥ ``spikeFactor`` × baseline and visitors ≥ ``minVisitors``;
- **drop**: visitors ≤ ``dropFactor`` × baseline and baseline ≥ ``minVisitors``
  (``dropFactor`` 0: no drop alerts).

The thresholds are the project's option ``alerts`` (:data:`DEFAULTS` otherwise). The mail says
which sources, pages and countries account for the change: for each value, its visitors in the
hour minus its mean in the baseline hours, largest contributions in the direction of the change
first. Each hour is looked at once per project (state in ``mail_alert_state``), so a project
gets at most one alert an hour; recipients are the subscriptions of kind ``alerts``, each
enqueued with the dedupe key ``alert:<project>:<hour>:<email>``. The mail also lists the saved
goals' conversions in the hour against their baseline. Each saved goal is watched with the same
rule (:mod:`svc.mail.goal_alerts`), its alerts mailed on their own.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from sqlalchemy import select, update

from svc.errors import InvalidRequest
from svc.mail import goal_alerts, subscriptions
from svc.mail.alert_rule import DEFAULTS as DEFAULTS  # (the rule's names, as they were here)
from svc.mail.alert_rule import OPTION as OPTION
from svc.mail.alert_rule import compared_hours as compared_hours
from svc.mail.alert_rule import direction, thresholds
from svc.mail.outbox import enqueue
from svc.meta import tables
from svc.meta.store import MetaStore, Project
from svc.queries.hourly import BREAKDOWNS, hours_visitors
from svc.saved.goals import list_goals
from svc.settings import Settings
from svc.storage.events import EventStore

log = logging.getLogger(__name__)

BOUNDS: dict[str, tuple[float, float]] = {
    "spikeFactor": (1.1, 1000.0),
    "dropFactor": (0.0, 0.9),
    "minVisitors": (1, 1_000_000),
    "baselineDays": (1, 28),
}
TOP = 5
_state = tables.mail_alert_state


def check_option(value: Any) -> dict[str, float]:
    """The project option ``alerts`` checked (400 naming ``options.alerts.<name>``)."""
    if not isinstance(value, dict):
        raise InvalidRequest("`options.alerts` must be an object", field="options.alerts")
    out: dict[str, float] = {}
    for name, raw in value.items():
        where = f"options.alerts.{name}"
        if name not in BOUNDS:
            raise InvalidRequest(
                f"`options.alerts`: unknown {name!r}; use {', '.join(BOUNDS)}", field=where
            )
        low, high = BOUNDS[name]
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not low <= raw <= high:
            raise InvalidRequest(
                f"`{where}` must be a number from {low:g} to {high:g}", field=where
            )
        if name in ("minVisitors", "baselineDays") and int(raw) != raw:
            raise InvalidRequest(f"`{where}` must be a whole number", field=where)
        out[name] = raw
    return out


@dataclass(frozen=True)
class Contribution:
    value: str
    visitors: int
    baseline: float

    @property
    def delta(self) -> float:
        return self.visitors - self.baseline


@dataclass(frozen=True)
class Alert:
    project: Project
    hour: datetime  # UTC, its start
    direction: str  # spike, drop
    visitors: int
    baseline: float
    rule: dict[str, float]
    causes: dict[str, list[Contribution]] = field(default_factory=dict)  # source, page, country
    days: int = 0  # the days the baseline is the mean of (0: the rule's baselineDays)
    goals: list[str] = field(default_factory=list)  # the saved goals' lines (goal_alerts.causes)


def evaluate(store: EventStore, project: Project, hour: datetime) -> Alert | None:
    """Whether the hour starting at ``hour`` (aware; a start of an hour in the project's time
    zone) fires an alert, and why (blocking)."""
    rule = thresholds(project)
    hour = hour.astimezone(UTC)
    earlier = compared_hours(hour, project.timezone, int(rule["baselineDays"]))
    days = max(1, len(earlier))
    data = hours_visitors(store, project.id, [hour, *earlier])
    visitors = data["total"].get(hour, {}).get("", 0)
    baseline = sum(data["total"].get(h, {}).get("", 0) for h in earlier) / days
    way = direction(rule, visitors, baseline)
    if way is None:
        return None
    causes: dict[str, list[Contribution]] = {}
    for by in BREAKDOWNS:
        now = data[by].get(hour, {})
        values = set(now)
        for h in earlier:
            values |= set(data[by].get(h, {}))
        items = [
            Contribution(
                v, now.get(v, 0), sum(data[by].get(h, {}).get(v, 0) for h in earlier) / days
            )
            for v in values
        ]
        sign = 1 if way == "spike" else -1
        items = [c for c in items if sign * c.delta > 0]
        items.sort(key=lambda c: (-sign * c.delta, c.value))
        causes[by] = items[:TOP]
    return Alert(project, hour, way, visitors, baseline, rule, causes, days)


def last_complete_hour(now: datetime, zone: str = "UTC") -> datetime:
    """The UTC start of the last hour of ``zone``'s clock that ended by ``now`` (in a zone
    whose offset has minutes, such as Asia/Kolkata, its hours start at :30 UTC)."""
    local = now.astimezone(ZoneInfo(zone)).replace(minute=0, second=0, microsecond=0)
    return local.astimezone(UTC) - timedelta(hours=1)


def check_all(
    settings: Settings, meta: MetaStore, store: EventStore, now: datetime, loaded_through_ms: int
) -> int:
    """Look at the last complete hour (of its time zone) of each project with alert
    subscribers, once per hour and project; enqueue the alerts that fire (blocking). Returns
    the mails enqueued. Without ``SVC_BASE_URL`` none (an alert carries links): the hours are
    not looked at, and the first one after it is set is."""
    from svc.mail.scheduler import base_url, list_headers, unsubscribe_url

    if not settings.base_url:
        return 0

    by_project: dict[str, list[subscriptions.Subscription]] = {}
    for sub in subscriptions.list_subscriptions(meta, kinds=("alerts",)):
        by_project.setdefault(sub.project_id, []).append(sub)
    sent = 0
    for project_id, subs in by_project.items():
        project = meta.find_project(project_id)
        if project is None:
            continue
        hour = last_complete_hour(now, project.timezone)
        hour_ms = int(hour.timestamp() * 1000)
        if hour_ms + 3600_000 > loaded_through_ms:
            continue  # the hour's events may still be on their way
        claimed = _claim_hour(meta, project_id, hour_ms)  # (the state's row made here)
        goals = list_goals(meta, project_id)
        goals_claimed = bool(goals) and goal_alerts.claim_hour(meta, project_id, hour_ms)
        if not claimed and not goals_claimed:
            continue
        found: list[goal_alerts.GoalFigure] = []
        alert: Alert | None = None
        try:  # the goals' figures serve their alerts and the traffic alert's mail
            found = goal_alerts.figures(store, project, hour, goals) if goals else []
        except Exception:
            log.exception("goal alert check of %s at %s", project_id, hour)
        if goals_claimed:
            for goal_alert in goal_alerts.evaluate(project, hour, found):
                sent += goal_alerts.send(settings, meta, goal_alert, subs)
        try:
            alert = evaluate(store, project, hour) if claimed else None
        except Exception:
            log.exception("alert check of %s at %s", project_id, hour)
        if alert is None:
            continue
        alert = replace(alert, goals=goal_alerts.causes(found, alert.direction == "spike"))
        log.info("alert: %s %s at %s", project_id, alert.direction, hour.isoformat())
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
                dedupe_key=f"alert:{project_id}:{hour_ms}:{sub.email}",
                headers=list_headers(unsubscribe),
            )
            sent += 1
        with meta.engine.begin() as conn:
            conn.execute(
                update(_state).where(_state.c.project_id == project_id).values(fired_hour=hour_ms)
            )
    return sent


def _claim_hour(meta: MetaStore, project_id: str, hour_ms: int) -> bool:
    """Record that this process looks at ``hour_ms`` of the project; False when it was looked
    at already (by this process or another)."""
    with meta.engine.begin() as conn:
        row = conn.execute(select(_state).where(_state.c.project_id == project_id)).first()
        if row is None:
            try:
                with conn.begin_nested():
                    conn.execute(
                        _state.insert().values(project_id=project_id, checked_hour=hour_ms)
                    )
            except Exception:
                return False
            return True
        if int(row.checked_hour) >= hour_ms:
            return False
        result = conn.execute(
            update(_state)
            .where(_state.c.project_id == project_id, _state.c.checked_hour == row.checked_hour)
            .values(checked_hour=hour_ms)
        )
        return bool(result.rowcount == 1)


def render(alert: Alert, base: str, unsubscribe_url: str) -> tuple[str, str, str]:
    """(subject, text, HTML) of an alert's mail."""
    p = alert.project
    up = alert.direction == "spike"
    zone = ZoneInfo(p.timezone)
    start = alert.hour.astimezone(zone)
    end = (alert.hour + timedelta(hours=1)).astimezone(zone)
    when = f"{start:%Y-%m-%d %H:%M}–{end:%H:%M} {start:%Z}"
    ratio = f"{alert.visitors / alert.baseline:.1f}×" if alert.baseline else "no visitors"
    subject = (
        f"Traffic {'spike' if up else 'drop'} on {p.name}: {alert.visitors} visitors "
        f"{when} ({ratio} usual)"
    )
    why = (
        f"{alert.visitors} visitors between {when}, against {alert.baseline:.1f} on average in "
        f"the same hour of the {alert.days or int(alert.rule['baselineDays'])} days before. "
        "The rule: "
        + (
            f"at least {alert.rule['spikeFactor']:g}× that and at least "
            f"{int(alert.rule['minVisitors'])} visitors."
            if up
            else f"at most {alert.rule['dropFactor']:g}× that, with a usual of at least "
            f"{int(alert.rule['minVisitors'])}."
        )
    )
    titles = {"source": "Sources", "page": "Pages", "country": "Countries"}
    text = [subject, "", why, "", "What accounts for the change (visitors: this hour vs usual):"]
    blocks = ""
    e = html.escape
    for by, title in titles.items():
        items = alert.causes.get(by, [])
        lines = [
            f"{c.value or '(none)'}: {c.visitors} vs {c.baseline:.1f} ({c.delta:+.1f})"
            for c in items
        ]
        text += ["", title] + [f"  {line}" for line in lines or ["(nothing stands out)"]]
        entries = (
            "".join(f"<li>{e(line)}</li>" for line in lines) or "<li>(nothing stands out)</li>"
        )
        blocks += f"<h3>{e(title)}</h3><ul>{entries}</ul>"
    if alert.goals:  # the saved goals: conversions this hour vs usual
        text += ["", "Goals (conversions: this hour vs usual)"]
        text += [f"  {line}" for line in alert.goals]
        entries = "".join(f"<li>{e(line)}</li>" for line in alert.goals)
        blocks += f"<h3>Goals (conversions: this hour vs usual)</h3><ul>{entries}</ul>"
    day = start.date().isoformat()
    query = {"project": p.id, "period": "custom", "from": day, "to": day, "interval": "hour"}
    link = f"{base}/dashboard?{urlencode(query)}"
    text += ["", f"Dashboard: {link}", "", f"Unsubscribe from alerts: {unsubscribe_url}", ""]
    body = (
        '<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#0f172a">'
        f"<h2>{e(subject)}</h2><p>{e(why)}</p>"
        "<p>What accounts for the change (visitors: this hour vs usual):</p>"
        f'{blocks}<p><a href="{e(link)}">Open the dashboard</a></p>'
        f'<p style="color:#64748b;font-size:12px"><a href="{e(unsubscribe_url)}">Unsubscribe'
        "</a> from these alerts.</p></body></html>"
    )
    return subject, "\n".join(text), body
