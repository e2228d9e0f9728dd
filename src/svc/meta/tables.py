"""SQLAlchemy Core tables of the metadata store (the latest schema; see migrations.py)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("name", String(200), nullable=False),
    Column("applied_at", BigInteger, nullable=False),
)

projects = Table(
    "projects",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(40), nullable=False, unique=True),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    Column("domains", Text, nullable=False, server_default="[]"),
    Column("plan", String(40), nullable=False, server_default="free"),
    Column("options", Text, nullable=False, server_default="{}"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("scopes", String(100), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
    Column("hint", String(24), nullable=False),
    Column("name", String(100), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger, nullable=True),
    Column("revoked_at", BigInteger, nullable=True),
    Column("expires_at", BigInteger, nullable=True),
    Index("ix_api_keys_project", "project_id"),
)

# accounts (svc.accounts): people, teams, roles, sessions, invitations -----------------------

accounts = Table(
    "accounts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("email", String(320), nullable=False, unique=True),  # lower case
    Column("name", String(100), nullable=False, server_default=""),
    Column("password_hash", String(200), nullable=False),  # argon2id; "" before it is set
    Column("totp_secret", String(64), nullable=True),  # two-factor on once confirmed
    Column("totp_pending", String(64), nullable=True),  # enrolled, not confirmed yet
    # the last two-factor time step accepted (RFC 6238 5.2: it and earlier ones are refused)
    Column("totp_last_step", BigInteger, nullable=True),
    Column("disabled_at", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

teams = Table(
    "teams",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

team_members = Table(
    "team_members",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("role", String(16), nullable=False),  # owner, admin, editor, viewer
    Column("created_at", BigInteger, nullable=False),
    Index("ix_team_members_account", "account_id"),
)

project_teams = Table(
    "project_teams",
    metadata,
    Column(
        "project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("team_id", String(40), ForeignKey("teams.id", ondelete="CASCADE"), nullable=False),
    Column("assigned_at", BigInteger, nullable=False),
    Index("ix_project_teams_team", "team_id"),
)

project_guests = Table(
    "project_guests",
    metadata,
    Column(
        "project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    ),
    Column(
        "account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_project_guests_account", "account_id"),
)

account_sessions = Table(
    "account_sessions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Index("ix_account_sessions_account", "account_id"),
)

invitations = Table(
    "invitations",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("hash", String(64), nullable=False, unique=True),
    Column("email", String(320), nullable=False),
    Column("team_id", String(40), ForeignKey("teams.id", ondelete="CASCADE"), nullable=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    Column("role", String(16), nullable=False),  # a team role, or guest (with project_id)
    Column("invited_by", String(40), nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("accepted_at", BigInteger, nullable=True),
    Column("revoked_at", BigInteger, nullable=True),
)

password_resets = Table(
    "password_resets",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("hash", String(64), nullable=False, unique=True),
    Column("account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("used_at", BigInteger, nullable=True),
)

recovery_codes = Table(
    "recovery_codes",
    metadata,
    Column(
        "account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("hash", String(64), primary_key=True),
    Column("used_at", BigInteger, nullable=True),
)

ACCOUNT_TABLES = (
    accounts,
    teams,
    team_members,
    project_teams,
    project_guests,
    account_sessions,
    invitations,
    password_resets,
    recovery_codes,
)

salts = Table(
    "salts",
    metadata,
    Column("day", String(10), primary_key=True),
    Column("salt", LargeBinary(32), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

usage = Table(
    "usage",
    metadata,
    Column("project_id", String(64), primary_key=True),
    Column("month", String(7), primary_key=True),
    Column("events", BigInteger, nullable=False, server_default="0"),
)

# the background jobs' leases (svc.cluster.leases): which node runs each job, until when
job_leases = Table(
    "job_leases",
    metadata,
    Column("job", String(40), primary_key=True),
    Column("holder", String(80), nullable=False),
    Column("expires_at", BigInteger, nullable=False),  # ms; the lease is free after it
    Column("taken_at", BigInteger, nullable=False),  # ms; when this holder took it
    Column("renewed_at", BigInteger, nullable=False),  # ms
)

# each node's watermark (svc.cluster.watermarks): every event it received before is loaded
node_watermarks = Table(
    "node_watermarks",
    metadata,
    Column("node_id", String(80), primary_key=True),
    Column("loaded_through_ms", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# what the ingestion pipeline dropped (svc.meta.dropped): counts per project, UTC day and
# reason; a few of the dropped requests per project and day, kept 3 days, never an address
dropped_counts = Table(
    "dropped_counts",
    metadata,
    Column("project_id", String(64), primary_key=True),
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC
    # a DropReason's value (events), or a Refusal's (requests: svc.meta.dropped)
    Column("reason", String(32), primary_key=True),
    Column("events", BigInteger, nullable=False, server_default="0"),
)

dropped_samples = Table(
    "dropped_samples",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project_id", String(64), nullable=False),
    Column("day", String(10), nullable=False),  # YYYY-MM-DD, UTC, of at_ms
    Column("at_ms", BigInteger, nullable=False),  # when it was received (ms, UTC)
    Column("reason", String(32), nullable=False),
    Column("user_agent", String(256), nullable=False),  # cut to 256 characters
    Column("path", Text, nullable=False),
    Column("referrer_host", String(255), nullable=False),
    Column("country", String(2), nullable=False),  # "" when not known
    Index("ix_dropped_samples_project_day", "project_id", "day"),
    Index("ix_dropped_samples_at", "at_ms"),
)

# mail (svc.mail): the outbox, report and alert subscriptions, the alerts' state -------------

mail_outbox = Table(
    "mail_outbox",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("kind", String(40), nullable=False),
    Column("dedupe_key", String(300), nullable=True, unique=True),
    Column("to_addr", String(320), nullable=False),
    Column("subject", Text, nullable=False),
    Column("body_text", Text, nullable=False),
    Column("body_html", Text, nullable=True),
    Column("attachments", Text, nullable=False, server_default="[]"),
    Column("status", String(16), nullable=False),  # queued, sent, failed
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("next_attempt_at", BigInteger, nullable=False),
    Column("sent_at", BigInteger, nullable=True),
    Column("headers", Text, nullable=False, server_default="{}"),  # migration 22
    Index("ix_mail_outbox_due", "status", "next_attempt_at"),
)

mail_subscriptions = Table(
    "mail_subscriptions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("email", String(320), nullable=False),  # lower case; a member's or anyone's
    Column("kind", String(16), nullable=False),  # daily, weekly, monthly, alerts
    Column("token", String(64), nullable=False, unique=True),  # the unsubscribe link's
    Column("last_period", String(40), nullable=True),  # the last period mailed (or skipped)
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("project_id", "email", "kind", name="uq_mail_subscriptions"),
)

mail_alert_state = Table(
    "mail_alert_state",
    metadata,
    Column(
        "project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("checked_hour", BigInteger, nullable=False),  # the last hour looked at (ms, UTC)
    Column("fired_hour", BigInteger, nullable=True),  # the last hour an alert was sent for
    # the last hour whose saved goals were looked at (svc.mail.goal_alerts; ms, UTC)
    Column("goals_checked_hour", BigInteger, nullable=True),
)

# edge secrets (svc.meta.edge_secrets): registered over the API, each scoped to its project ----

edge_secrets = Table(
    "edge_secrets",
    metadata,
    Column("id", String(40), primary_key=True),  # the key id: svc_edge_<id>_<random>
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("secret", String(128), nullable=False),  # in clear: an HMAC key must be known
    Column("provider", String(40), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_edge_secrets_project", "project_id"),
)

# saved goals, funnels, segments and annotations (svc.saved): each of one project ------------

saved_goals = Table(
    "saved_goals",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("kind", String(8), nullable=False),  # event, page
    Column("target", Text, nullable=False),  # the event's name, or the page's path pattern
    Column("prop_key", String(300), nullable=True),  # an event goal's property match
    Column("prop_value", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_saved_goals_project", "project_id"),
)

saved_funnels = Table(
    "saved_funnels",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("steps", Text, nullable=False),  # JSON: the steps as GET /metrics/funnel takes them
    Column("window_seconds", Integer, nullable=True),  # None: the default window
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_saved_funnels_project", "project_id"),
)

segments = Table(
    "segments",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("filters", Text, nullable=False),  # JSON: filter strings as the reads take them
    Column("shared", Integer, nullable=False),  # 1: every reader of the project; 0: its owner's
    Column("owner_id", String(40), nullable=True),  # the account that made it (None: a key's)
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_segments_project", "project_id"),
)

saved_annotations = Table(
    "annotations",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", String(64), ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("day", String(10), nullable=True),  # YYYY-MM-DD: a whole day (else at_ms)
    Column("at_ms", BigInteger, nullable=True),  # a moment (ms, UTC)
    Column("text", Text, nullable=False),
    Column("created_by", String(64), nullable=False),  # an account id, a key id, or "admin"
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_annotations_project", "project_id"),
)

SAVED_TABLES = (saved_goals, saved_funnels, segments, saved_annotations)

# single sign-on with OpenID Connect (svc.accounts.sso) ----------------------------------------

# a sign-in begun at the provider: single use, kept until it expires (minutes); the state and
# the browser's binding stored as SHA-256 hashes, the nonce and PKCE verifier as they are (the
# code exchange needs the verifier, and neither signs anyone in without the provider's code)
oidc_logins = Table(
    "oidc_logins",
    metadata,
    Column("state_hash", String(64), primary_key=True),
    Column("binding_hash", String(64), nullable=False),
    Column("nonce", String(64), nullable=False),
    Column("code_verifier", String(128), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Index("ix_oidc_logins_expires", "expires_at"),
)

# an account's identity at a provider: (issuer, subject) signs in to the account
oidc_identities = Table(
    "oidc_identities",
    metadata,
    Column("issuer", String(255), primary_key=True),
    Column("subject", String(255), primary_key=True),
    Column("account_id", String(40), ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
    Column("email", String(320), nullable=False),  # as the provider last said it (lower case)
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger, nullable=False),
    Index("ix_oidc_identities_account", "account_id"),
)

SSO_TABLES = (oidc_logins, oidc_identities)
