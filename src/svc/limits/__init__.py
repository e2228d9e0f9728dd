"""Limits that protect the service: rate limits, monthly quotas, slow clients. The rules
only: the HTTP layer applies them (:mod:`svc.http.limits`, the ASGI middleware; and the HTTP
server, :mod:`svc.http.server`, the client deadlines); nothing here imports :mod:`svc.http`.

* :mod:`svc.limits.bucket`: token buckets in this process (the rule, the maths, the table);
* :mod:`svc.limits.shared`: the same buckets and the quota counters in Redis, for several
  processes (``SVC_REDIS_URL``);
* :mod:`svc.limits.plans` and :mod:`svc.limits.quota`: plans, each project's monthly quota,
  and the ledger ingestion reserves from before it writes;
* :mod:`svc.limits.timeouts`: deadlines for slow clients, and the connections they cut off.

See ``docs/limits.md``.
"""

from __future__ import annotations

from svc.limits.bucket import Decision, Rule, TokenBuckets, parse_rule
from svc.limits.plans import Plans, parse_plans
from svc.limits.quota import Quotas

__all__ = ["Decision", "Plans", "Quotas", "Rule", "TokenBuckets", "parse_plans", "parse_rule"]
