"""Versioned migrations of the metadata store.

Each migration is a function of a connection, applied once, in order, in its own transaction,
and recorded in ``schema_migrations``. Add new ones at the end; never edit an applied one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, inspect, select, text

from svc.meta import tables

Migration = Callable[[Connection], None]


def _m001_initial(conn: Connection) -> None:
    for table in (tables.projects, tables.api_keys, tables.salts, tables.usage):
        table.create(conn, checkfirst=True)


def _m002_accounts(conn: Connection) -> None:
    for table in tables.ACCOUNT_TABLES:  # in order: a table after those it refers to
        table.create(conn, checkfirst=True)


def _m020_mail_outbox(conn: Connection) -> None:
    tables.mail_outbox.create(conn, checkfirst=True)


def _m021_mail_subscriptions(conn: Connection) -> None:
    tables.mail_subscriptions.create(conn, checkfirst=True)
    tables.mail_alert_state.create(conn, checkfirst=True)


def _m022_mail_headers(conn: Connection) -> None:
    # a store made at 20 or later has the column already (the table is made as it is now)
    if "headers" not in {c["name"] for c in inspect(conn).get_columns("mail_outbox")}:
        conn.execute(text("ALTER TABLE mail_outbox ADD COLUMN headers TEXT NOT NULL DEFAULT '{}'"))


def _m050_edge_secrets(conn: Connection) -> None:
    tables.edge_secrets.create(conn, checkfirst=True)


def _m051_totp_last_step(conn: Connection) -> None:
    # a store made at 51 or later has the column already (the table is made as it is now)
    if "totp_last_step" not in {c["name"] for c in inspect(conn).get_columns("accounts")}:
        conn.execute(text("ALTER TABLE accounts ADD COLUMN totp_last_step BIGINT"))


def _m060_saved(conn: Connection) -> None:
    for table in tables.SAVED_TABLES:
        table.create(conn, checkfirst=True)


def _m061_dropped(conn: Connection) -> None:
    tables.dropped_counts.create(conn, checkfirst=True)
    tables.dropped_samples.create(conn, checkfirst=True)


def _m062_sso(conn: Connection) -> None:
    for table in tables.SSO_TABLES:
        table.create(conn, checkfirst=True)


def _m063_job_leases(conn: Connection) -> None:
    tables.job_leases.create(conn, checkfirst=True)
    tables.node_watermarks.create(conn, checkfirst=True)


def _m064_goal_alert_state(conn: Connection) -> None:
    # a store made at 64 or later has the column already (the table is made as it is now)
    columns = {c["name"] for c in inspect(conn).get_columns("mail_alert_state")}
    if "goals_checked_hour" not in columns:
        conn.execute(text("ALTER TABLE mail_alert_state ADD COLUMN goals_checked_hour BIGINT"))


MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "initial: projects, api_keys, salts, usage", _m001_initial),
    (2, "accounts: accounts, teams, members, sessions, invitations, resets", _m002_accounts),
    (20, "mail: the outbox", _m020_mail_outbox),
    (21, "mail: report and alert subscriptions, alerts' state", _m021_mail_subscriptions),
    (22, "mail: extra headers of a mail (List-Unsubscribe)", _m022_mail_headers),
    (50, "edge: secrets registered over the API", _m050_edge_secrets),
    (51, "accounts: the last two-factor time step accepted", _m051_totp_last_step),
    (60, "saved: goals, funnels, segments and annotations of a project", _m060_saved),
    (61, "dropped: counts per project, day and reason; samples", _m061_dropped),
    (62, "accounts: single sign-on logins under way and linked identities", _m062_sso),
    (63, "cluster: the background jobs' leases, the nodes' watermarks", _m063_job_leases),
    (64, "mail: the last hour whose saved goals an alert looked at", _m064_goal_alert_state),
]


def migrate(engine: Engine) -> list[int]:
    """Apply every migration not applied yet; return the versions applied now."""
    applied_now: list[int] = []
    with engine.begin() as conn:
        if not inspect(conn).has_table("schema_migrations"):
            tables.schema_migrations.create(conn)
    with engine.begin() as conn:
        done = set(conn.scalars(select(tables.schema_migrations.c.version)))
    for version, name, apply in MIGRATIONS:
        if version in done:
            continue
        with engine.begin() as conn:
            apply(conn)
            conn.execute(
                tables.schema_migrations.insert().values(
                    version=version, name=name, applied_at=int(time.time() * 1000)
                )
            )
        applied_now.append(version)
    return applied_now


def current_version(engine: Engine) -> int:
    with engine.connect() as conn:
        if not inspect(conn).has_table("schema_migrations"):
            return 0
        versions = list(conn.scalars(select(tables.schema_migrations.c.version)))
    return max(versions, default=0)
