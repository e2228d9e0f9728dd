"""The accounts' domain operations, called by the HTTP handlers (:mod:`svc.http.accounts`)
and ``svcm``: sign-in and out, the account's own settings, two-factor, teams and members,
invitations, password resets and transfers.

``actor`` is the caller: its :class:`~svc.accounts.access.Access`, or None for the admin
token (every right). Handlers check the route's right first (:mod:`svc.http.rules`); the
checks here are those a route's rule cannot express (making an owner needs ``owner``, a
transfer needs ``owner`` of both teams). Blocking methods run in worker threads; the
``async`` ones (sign-in, turning two-factor off) use the event loop for the throttle and
a thread for argon2.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from svc.accounts import passwords
from svc.accounts.service.base import HOUR_MS
from svc.accounts.service.invitations import Invitations
from svc.accounts.service.operators import Operators
from svc.accounts.service.own_account import OwnAccount
from svc.accounts.service.resets import PasswordResets
from svc.accounts.service.signin import InvalidCredentials, TotpRequired
from svc.accounts.service.team_admin import TeamAdmin
from svc.accounts.throttle import SignInThrottle, reset_throttle
from svc.meta.store import MetaStore
from svc.settings import Settings

if TYPE_CHECKING:  # imported where SVC_REDIS_URL is set (svc.limits.core)
    from svc.limits.shared import RedisBuckets


__all__ = ["HOUR_MS", "AccountService", "InvalidCredentials", "TotpRequired"]


class AccountService(OwnAccount, Invitations, Operators, TeamAdmin, PasswordResets):
    """Every operation of the accounts, each part in a module of this package:
    :mod:`.signin`, :mod:`.own_account`, :mod:`.operators`, :mod:`.team_admin`,
    :mod:`.invitations`, :mod:`.resets`."""

    def __init__(
        self, meta: MetaStore, settings: Settings, shared_limits: RedisBuckets | None = None
    ) -> None:
        """``shared_limits``: the rate limits' Redis buckets, where the sign-in limits then
        live too (shared by every process); None: this process's own."""
        self.meta = meta
        self.settings = settings
        passwords.configure(settings.password_hash_memory_kib, settings.password_hash_iterations)
        self.throttle = SignInThrottle(
            settings.signin_limit_per_address, settings.signin_limit_per_account, shared_limits
        )
        self.reset_limits = reset_throttle(
            settings.reset_limit_per_address, settings.reset_limit_per_account, shared_limits
        )
        #: reset mails being prepared after their 202 was answered (:meth:`request_reset`)
        self._reset_work: set[asyncio.Task[None]] = set()
