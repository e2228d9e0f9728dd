"""``Limits``: every limit of one svc process, built from the settings.

It holds the rules and their buckets (in this process, or in Redis when ``SVC_REDIS_URL`` is
set), the plans and the quota ledger; :mod:`svc.http.limits` applies them to requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from svc.limits import timeouts
from svc.limits.bucket import Rule, TokenBuckets, parse_rule
from svc.limits.plans import Plans, parse_plans
from svc.limits.quota import Counts, Quotas
from svc.settings import Settings, env_name

if TYPE_CHECKING:  # redis-py is imported only where SVC_REDIS_URL is set (~0.2 s a process)
    from svc.limits.shared import RedisBuckets, RedisLink

INGEST_IP = "ingest_ip"
INGEST_PROJECT = "ingest_project"
READ_KEY = "read_key"
MANAGE_CREDENTIAL = "manage_credential"
AUTH_FAILURES_IP = "auth_failures_ip"

RULE_SETTINGS = {
    INGEST_IP: "rate_limit_ingest_per_ip",
    INGEST_PROJECT: "rate_limit_ingest_per_project",
    READ_KEY: "rate_limit_read_per_key",
    MANAGE_CREDENTIAL: "rate_limit_manage_per_credential",
    AUTH_FAILURES_IP: "rate_limit_auth_failures_per_ip",
}


class Limits:
    """Rate-limit rules with their buckets, plans and the quota ledger."""

    def __init__(self, settings: Settings, usage: Counts) -> None:
        self.rules: dict[str, Rule] = {
            name: parse_rule(name, getattr(settings, field), env_name(field))
            for name, field in RULE_SETTINGS.items()
        }
        self.buckets: dict[str, TokenBuckets] = {
            name: TokenBuckets(rule) for name, rule in self.rules.items() if rule.enabled
        }
        self.plans: Plans = parse_plans(settings.plans, settings.monthly_quota)
        self.max_batch_events = settings.max_batch_events
        self.link: RedisLink | None = None
        self.remote: RedisBuckets | None = None
        warning, margin = settings.quota_warning_percent, settings.max_batch_events
        self.quotas: Quotas = Quotas(self.plans, usage, warning, margin)
        if settings.redis_url:
            from svc.limits.shared import RedisBuckets, RedisLink, RedisQuotas

            self.link = RedisLink(settings.redis_url)
            self.remote = RedisBuckets(self.link)
            self.quotas = RedisQuotas(self.plans, usage, self.link, warning, margin)

    @property
    def backend(self) -> str:
        return "redis" if self.link is not None else "memory"

    async def close(self) -> None:
        if self.link is not None:
            await self.link.close()

    async def health(self) -> dict[str, Any]:
        """The ``limits`` section of /health: settings in force and what they refused."""
        out: dict[str, Any] = {
            "backend": self.backend,
            "rules": {name: _describe(rule) for name, rule in self.rules.items()},
            "rateLimited": {name: b.denied for name, b in self.buckets.items()},
            "trackedKeys": {name: len(b) for name, b in self.buckets.items()},
            "plans": self.plans.to_json(),
            "quota": self.quotas.summary(),
            "clientTimeouts": dict(timeouts.COUNTS),
        }
        if self.link is not None and self.remote is not None:
            out["redis"] = {
                **await self.link.ping(),
                "failures": self.link.failures,
                "lastError": self.link.last_error,
                "fallbackChecks": self.remote.fallbacks,
            }
        return out


def _describe(rule: Rule) -> dict[str, Any]:
    if not rule.enabled:
        return {"setting": rule.setting, "enabled": False}
    return {
        "setting": rule.setting,
        "enabled": True,
        "perSecond": round(rule.rate, 6),
        "burst": rule.burst,
    }
