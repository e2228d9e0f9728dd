"""What the parts of :class:`svc.accounts.service.AccountService` share: the metadata store
and the settings they work with, the sessions' length, the log, and the check of a right on a
team that a route's rule cannot express."""

from __future__ import annotations

import logging

from svc.accounts.access import Access
from svc.errors import Forbidden
from svc.meta.store import MetaStore
from svc.settings import Settings

log = logging.getLogger("svc.accounts")

HOUR_MS = 3600 * 1000


class ServiceBase:
    """The state every part of the service reads (set by ``AccountService.__init__``)."""

    meta: MetaStore
    settings: Settings

    @property
    def session_ms(self) -> int:
        return int(self.settings.session_hours * HOUR_MS)


def _need(actor: Access | None, right: str, team_id: str, what: str) -> None:
    if actor is not None and right not in actor.on_team(team_id):
        raise Forbidden(f"only a team member with the {right!r} right may {what}")
