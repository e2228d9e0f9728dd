"""The one settings object of svc.

Every setting is read once at start-up from an ``SVC_*`` environment variable or a CLI flag
(flags win). Each has a default and one line of help; ``docs/settings.md`` lists them all and a
test checks that the list is complete.

The names (``SVC_<NAME>``, ``--<name>``) and the reading of a value from its text are in
:mod:`svc.settings.env`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc.settings.env import env_name, flag_name, values_from

__all__ = ["Settings", "describe", "env_name", "flag_name"]


def _setting(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Settings:
    """Immutable configuration of one svc process."""

    host: str = _setting("127.0.0.1", "Address the HTTP server listens on.")
    port: int = _setting(8080, "Port the HTTP server listens on.")
    data_dir: Path = _setting(
        Path("./data"), "Directory for the spool, the embedded event store and metadata."
    )
    admin_token: str = _setting(
        "",
        "Admin token (svc_admin_...). Empty: one is generated on first start, "
        "printed once and its hash kept in the data directory.",
    )
    clickhouse_url: str = _setting(
        "",
        "ClickHouse server URL (http://user:pass@host:8123/db). Empty: embedded chDB "
        "in <data dir>/events.",
    )
    meta_url: str = _setting(
        "",
        "SQLAlchemy URL of the metadata database (postgresql+psycopg://...). Empty: "
        "SQLite in <data dir>/meta.db.",
    )
    meta_start_fresh: bool = _setting(
        False,
        "Start with an empty metadata database when <data dir>/meta.db is missing beside an "
        "event store, a spool or the admin token's hash (earlier projects and keys are gone). "
        "false: refuse to start.",
    )
    base_url: str = _setting(
        "",
        "Public address of the service (https://stats.example.com): every link in mail starts "
        "with it; mail needs it. Empty: answers' links use the request's origin.",
    )
    smtp_url: str = _setting(
        "",
        "SMTP server for outgoing mail: smtp://user:pass@host:587?starttls=true or "
        "smtps://user:pass@host:465. Empty: mail is off (mail waits in the outbox, unsent).",
    )
    mail_from: str = _setting(
        "", "Sender of outgoing mail (svc <svc@example.com>). Empty: svc@<host of SVC_BASE_URL>."
    )
    mail_retry_seconds: float = _setting(
        30.0,
        "Wait before retrying a mail the SMTP server did not take; doubled at each attempt, "
        "at most an hour (s).",
    )
    spool_segment_bytes: int = _setting(
        8 * 1024 * 1024, "A spool segment is closed and handed to the loader past this size."
    )
    spool_flush_interval_ms: int = _setting(
        1000, "An open spool segment is closed and loaded at least this often (ms)."
    )
    rollup_interval_seconds: float = _setting(
        60.0,
        "How often the daily rollups of finished days (and of days late events changed) are "
        "brought up to date (s).",
    )
    snapshot_interval_seconds: float = _setting(
        300.0,
        "How often at most the days not rolled up yet (today) are snapshot for GET /metrics, "
        "when events changed them (s); 0 turns the snapshots off.",
    )
    funnel_pass_visitors: int = _setting(
        4_000_000,
        "A funnel over more visitors than this (as the rollups count them), not read from "
        "visitor_steps, is read in passes of about this many by session day: less memory.",
    )
    funnel_rolled_visitors: int = _setting(
        1_000_000,
        "A funnel over more visitors than this (as the daily rollups count them), without "
        "filters and with steps of whole paths and event names, reads its rolled days per "
        "visitor (visitor_steps) instead of their events: faster from about 600,000 on.",
    )
    rollup_max_property_values: int = _setting(
        1000,
        "A custom property is rolled up for a day when it has at most this many values that "
        "day; a property with more (an id, a URL) is read from the events for that day.",
    )
    rollup_section_min_sessions: int = _setting(
        10_000,
        "A day with at least this many sessions gets rollup rows per section of the site and "
        "per busy value's pages, which serve filters on the page and the page list under one "
        "value; a smaller day is read from its rolled sessions, quick at that size.",
    )
    retention_months: int = _setting(
        0,
        "Raw events (and their session rows) are kept this many whole months before the current "
        "one, then deleted; a project's options.retentionMonths overrides it. 0: forever.",
    )
    rollup_retention_months: int = _setting(
        0,
        "The daily rollups, which answer /metrics and breakdowns once raw events are gone, are "
        "kept this many months (never less than the raw events). 0: forever.",
    )
    retention_interval_seconds: float = _setting(
        3600.0, "How often the retention job looks for data past its projects' retention (s)."
    )
    store_memory_release_seconds: float = _setting(
        0.1,
        "Embedded store: after loading, hand the memory its inserts freed back to the system "
        "at most this often (s; its allocator otherwise keeps ~150 MB). 0: never.",
    )
    read_memo_entries: int = _setting(
        256,
        "Embedded store: the reads a report makes first (the sessions that cross its range's "
        "ends, the days rolled up) kept for the next reports of the same range while nothing "
        "is written; this many at most. 0: none. A ClickHouse server keeps none.",
    )
    export_piece_events: int = _setting(
        50_000,
        "Embedded store: GET /export reads NDJSON and CSV in pieces of whole UTC hours with at "
        "most about this many events (~30 MB of NDJSON), so that an export's memory stays "
        "bounded. Parquet is read whole.",
    )
    delete_drain_seconds: float = _setting(
        30.0,
        "Deleting a project first loads what the spool holds (so none of its events outlives "
        "it); past this many seconds the deletion answers 503 and deletes nothing.",
    )
    spool_max_backlog_bytes: int = _setting(
        2 * 1024 * 1024 * 1024,
        "Ingestion answers 503 when the spool holds more than this many bytes not yet loaded.",
    )
    group_commit_max_wait_us: int = _setting(
        0,
        "Extra time (µs) the spool writer waits to gather more requests into one fsync. "
        "0: commit as soon as the previous fsync ends.",
    )
    fsync: bool = _setting(
        True, "fsync the spool before acknowledging. Turn off only for throwaway benchmarks."
    )
    session_timeout_minutes: int = _setting(
        30, "A derived session ends after this many minutes without an event."
    )
    event_id_window_hours: int = _setting(
        48, "How long an eventId is remembered for deduplication (hours)."
    )
    max_body_bytes: int = _setting(1024 * 1024, "Largest accepted request body (bytes).")
    max_batch_events: int = _setting(1000, "Most events accepted in one batch.")
    key_cache_seconds: float = _setting(
        5.0, "How long a verified API key is cached in memory before it is looked up again."
    )
    housekeeping_interval_seconds: float = _setting(
        10.0,
        "How often sessions and eventIds expire, salts are refreshed, key use and usage are "
        "recorded and the metadata database's file is checked (s).",
    )
    trusted_proxies: str = _setting(
        "",
        "Comma-separated CIDRs of proxies whose X-Forwarded-For is trusted for the client address.",
    )
    edge_secret: str = _setting(
        "",
        "Secrets shared with edges (comma-separated; also <data dir>/edge-secrets): POST "
        "/analytics whose x-svc-edge-* headers they sign is the visitor's (docs/edge.md).",
    )
    monthly_quota: int = _setting(
        100_000, "Events a project may store per calendar month (UTC) on the free plan."
    )
    plans: str = _setting(
        "pro=1000000,business=10000000,unlimited=0",
        "Plans besides free as name=events a month, comma-separated; 0: unlimited. "
        "free=N here overrides SVC_MONTHLY_QUOTA.",
    )
    quota_warning_percent: int = _setting(
        80, "Ingestion answers carry Svc-Quota-Warning from this share of the quota. 0: never."
    )
    rate_limit_ingest_per_ip: str = _setting(
        "20:200",
        "POST /analytics per client address and project: RATE[/s|/m|/h][:BURST] "
        "(requests; default per second, burst = one unit's worth). 0: off.",
    )
    rate_limit_ingest_per_project: str = _setting(
        "1000:10000", "POST /analytics per project, all addresses together (same form). 0: off."
    )
    rate_limit_read_per_key: str = _setting(
        "20:200", "GET /metrics, /metrics/* and /export per credential (same form). 0: off."
    )
    rate_limit_manage_per_credential: str = _setting(
        "20:200", "Requests to /projects per credential (same form). 0: off."
    )
    rate_limit_auth_failures_per_ip: str = _setting(
        "1:30",
        "Failed authentications (401) per client address; past it, requests without a "
        "recently verified credential get 429 (same form). 0: off.",
    )
    signin_limit_per_address: str = _setting(
        "30/h:30",
        "Failed sign-ins per client address (same form as the rate limits); past it, sign-in "
        "from that address gets 429. 0: off.",
    )
    signin_limit_per_account: str = _setting(
        "10/h:10",
        "Failed sign-ins per email, known or not (same form); past it, sign-in to that "
        "account gets 429. 0: off.",
    )
    reset_limit_per_address: str = _setting(
        "10/h:10",
        "Password-reset requests per client address (same form as the rate limits), answered "
        "or not; past it, POST /auth/reset from that address gets 429. 0: off.",
    )
    reset_limit_per_account: str = _setting(
        "3/h:3",
        "Password-reset requests per email, known or not (same form); past it, POST "
        "/auth/reset for that email gets 429 and no mail is sent. 0: off.",
    )
    session_hours: float = _setting(
        24.0, "Lifetime of an account's session token after sign-in (hours)."
    )
    password_signin: bool = _setting(
        True,
        "Sign-in with an email and a password (and password resets, and sign-up by invitation "
        "with a password). false: those routes answer 403 password_signin_off and people sign "
        "in with single sign-on only (needs SVC_OIDC_ISSUER).",
    )
    oidc_issuer: str = _setting(
        "",
        "Single sign-on: the OpenID Connect provider's issuer (https://id.example.com/realms/"
        "acme); its discovery document is <issuer>/.well-known/openid-configuration, the "
        "redirect URI <SVC_BASE_URL>/auth/oidc/callback. Empty: single sign-on is off.",
    )
    oidc_client_id: str = _setting(
        "", "Single sign-on: svc's client id at the provider (needed with SVC_OIDC_ISSUER)."
    )
    oidc_client_secret: str = _setting(
        "",
        "Single sign-on: svc's client secret at the provider. Empty: a public client (PKCE "
        "alone, no client authentication at the token endpoint).",
    )
    oidc_team: str = _setting(
        "",
        "Single sign-on: the team (team_...) a person signing in for the first time joins, "
        "with SVC_OIDC_ROLE (an account is made for them). Empty: only people with an "
        "account of the same verified email may sign in with it.",
    )
    oidc_role: str = _setting(
        "viewer", "Single sign-on: the role in SVC_OIDC_TEAM (owner, admin, editor, viewer)."
    )
    sso_limit_per_address: str = _setting(
        "120/h:60",
        "Single sign-ons begun (POST /auth/oidc/start) per client address (same form as the "
        "rate limits); past it, 429. 0: off.",
    )
    oidc_label: str = _setting(
        "SSO", 'Single sign-on: the provider\'s name on the button ("Sign in with <label>").'
    )
    invitation_hours: float = _setting(
        168.0, "Lifetime of an invitation link (hours; 168 is a week)."
    )
    reset_minutes: float = _setting(60.0, "Lifetime of a password-reset link (minutes).")
    password_hash_memory_kib: int = _setting(
        65536, "Memory of an argon2id password hash (KiB; at least 8 times its 4 lanes)."
    )
    password_hash_iterations: int = _setting(3, "Passes of an argon2id password hash.")
    redis_url: str = _setting(
        "",
        "Redis URL (redis://host:6379/0) shared by svc processes for rate limits, sign-in "
        "limits and quota counters. Empty: all kept in this process.",
    )
    client_header_timeout_seconds: float = _setting(
        10.0, "A client must send a request's headers within this time, else it is cut off. 0: off."
    )
    client_body_timeout_seconds: float = _setting(
        30.0, "A client must send a request's body within this time after its headers, else 408."
    )
    max_header_bytes: int = _setting(
        64 * 1024,
        "Largest request line and headers together (bytes): past it 431 (414 for the URL "
        "alone), and the connection is closed.",
    )
    fast_ingest_protocol: bool = _setting(
        True,
        "Answer POST /analytics inside the HTTP protocol, without uvicorn's ASGI layer (same "
        "answers, less CPU). false: through uvicorn like every other route.",
    )
    warm_up: bool = _setting(
        True,
        "Load the geo data and the user-agent rules at start-up (~0.8 s of CPU, beside the "
        "store's start), so that the first events do not wait for them. false: each is loaded "
        "by the first event that needs it (a loopback or private address needs no geo data).",
    )
    datacentre_ranges: str = _setting(
        "",
        "Data-centre address ranges: a file of one IPv4 or IPv6 CIDR a line (# comments), read "
        "at start-up (a bad line refuses the start); their events are dropped as data_centre "
        "unless the project keeps them (docs/operations.md). Empty: off.",
    )
    query_timeout_seconds: float = _setting(
        30.0,
        "Longest time the queries of one read (GET /metrics*) may run together; past it they "
        "are stopped and the answer is 504 query_timeout. 0: no limit. Exports have none.",
    )
    read_slots: int = _setting(
        0,
        "Reads of GET /metrics* that run at once, each on a store handle of its own (and as "
        "many spare handles for their side-by-side statements). 0: as many as the cores, 2 to 8.",
    )
    reads_per_project: int = _setting(
        2,
        "Reads one project (or one share link) may run at once; its others wait their turn, "
        "projects served in turn, so one project's reads never hold another's back.",
    )
    read_light_slots: int = _setting(
        1,
        "Slots beside SVC_READ_SLOTS for light reads alone (the top figures and realtime "
        "without a contains or matches filter; served first). 0: they share the slots.",
    )
    read_nice: int = _setting(
        10,
        "Nice value (0 to 19) of the store's threads for reads other than light ones "
        "(os_thread_priority), so ingestion and light reads take the cores first; needs "
        "CAP_SYS_NICE (the example systemd unit grants it). 0: as every other thread.",
    )
    read_queue_seconds: float = _setting(
        10.0,
        "Longest a read waits for its turn; past it the answer is 503 busy with Retry-After.",
    )
    memory_limit_mb: int = _setting(
        768,
        "The service's memory budget (MB of resident memory; the default suits 1 GB): over it, "
        "reads and exports run one at a time, the others waiting or answered 503 busy; a read "
        "takes at most the room left under it, shared by the reads running. 0: no budget.",
    )
    engine_memory_limit_mb: int = _setting(
        0,
        "Cap on the memory the embedded store tracks (MB; max_server_memory_usage): a read "
        "past it is answered 503 busy. 0: ClickHouse's own (nine tenths of the machine). The "
        "store's own work needs room under it (migrations, rollups; a 10M-event insert through "
        "the views took 580 MB); on a 1 GB machine with a small store, 576.",
    )
    read_memory_limit_mb: int = _setting(
        512,
        "Most memory one read may take in the store (max_memory_usage; a GROUP BY or sort "
        "past half of it goes on disk); past it, 503 busy. 0: no limit.",
    )
    max_series_points: int = _setting(
        10_000,
        "Most points a time series may have (GET /metrics/timeseries); more is 400 naming "
        "`interval`. 10,000: a day a point for 27 years, an hour a point for 416 days.",
    )
    log_level: str = _setting("info", "Log level: debug, info, warning or error.")
    log_format: str = _setting(
        "auto",
        "Log format: json (one JSON object a line, with the request's id), text (for a "
        "person), or auto: json when stderr is not a terminal, else text.",
    )
    internal_metrics_token: str = _setting(
        "",
        "Bearer token of GET /internal/metrics, the Prometheus metrics (at least 16 "
        "characters; docs/operations.md). Empty: that path answers 404.",
    )
    lake_url: str = _setting(
        "",
        "Raw-event lake: a directory (absolute path) or s3://bucket/prefix that gets each "
        "project's events of each finished UTC day as Parquet (docs/operations.md). Empty: off.",
    )
    lake_s3_endpoint: str = _setting(
        "",
        "S3 endpoint of the lake (https://<account>.r2.cloudflarestorage.com, MinIO's URL). "
        "Empty: AWS S3.",
    )
    lake_s3_key_id: str = _setting(
        "", "Access key id for the lake's bucket. Empty: boto3's chain (AWS_* variables, ...)."
    )
    lake_s3_secret: str = _setting("", "Secret access key for the lake's bucket.")
    lake_s3_region: str = _setting("", "Region of the lake's bucket. Empty: us-east-1 (R2: auto).")
    lake_settle_seconds: float = _setting(
        3600.0,
        "A UTC day is written to the lake this long after it ends (late events arriving after "
        "that make it written again) (s).",
    )
    lake_interval_seconds: float = _setting(
        300.0, "How often the lake looks for days to write or to write again (s)."
    )
    backup_to: str = _setting(
        "",
        "Where scheduled backups go: a directory (absolute path) or s3://bucket/prefix. "
        "Empty: no scheduled backups.",
    )
    backup_schedule: str = _setting(
        "daily@03:00",
        "When scheduled backups run (with SVC_BACKUP_TO): daily@HH:MM (UTC), or an interval "
        "such as 6h, 30m, 3600s.",
    )
    backup_keep: int = _setting(
        14,
        "Scheduled backups kept in SVC_BACKUP_TO (and the full backups they are based on). "
        "0: keep all.",
    )
    backup_full_every: int = _setting(
        7,
        "A scheduled backup is full when the newest full one has this many differential "
        "backups on it; the others are differential (only new parts).",
    )
    backup_s3_endpoint: str = _setting(
        "", "S3 endpoint of backups to s3://... (R2, MinIO). Empty: AWS S3."
    )
    backup_s3_key_id: str = _setting(
        "", "Access key id for backups to s3://.... Empty: boto3's chain (AWS_* variables, ...)."
    )
    backup_s3_secret: str = _setting("", "Secret access key for backups to s3://....")
    backup_s3_region: str = _setting("", "Region of the backups' bucket. Empty: us-east-1.")
    node_id: str = _setting(
        "",
        "Name of this node in /health and in the job leases (unique per node when several "
        "share a ClickHouse server). Empty: the host name.",
    )
    event_id_pending_seconds: float = _setting(
        120.0,
        "Several nodes (Redis): how long an eventId stays reserved for a request not answered "
        "yet; a copy meanwhile gets 503, and after it, if the first was never stored, is stored.",
    )
    job_lease_seconds: float = _setting(
        30.0,
        "With a ClickHouse server: a background job's lease (rollups, retention, lake, "
        "backups, mail) lasts this long unrenewed; a dead node's jobs move on after it.",
    )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Build settings from ``SVC_<NAME>`` variables, then apply non-None overrides."""
        return cls(**values_from(cls, environ, overrides))

    @property
    def chdb_path(self) -> Path:
        return self.data_dir / "events"

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"

    @property
    def export_dir(self) -> Path:
        """Where the embedded store writes a Parquet export before it is sent (then deleted)."""
        return self.data_dir / "exports"

    @property
    def effective_read_slots(self) -> int:
        """``SVC_READ_SLOTS``, or when 0 as many as the cores, 2 to 8."""
        if self.read_slots > 0:
            return self.read_slots
        return max(2, min(8, os.cpu_count() or 1))

    @property
    def read_lanes_slots(self) -> int:
        """The reads that may run at once, light ones included: a read handle and a read
        thread each."""
        return self.effective_read_slots + max(0, self.read_light_slots)

    @property
    def effective_read_nice(self) -> int:
        """``SVC_READ_NICE`` within 0 to 19 (the nice values a process may take itself)."""
        return max(0, min(19, self.read_nice))

    @property
    def effective_meta_url(self) -> str:
        return self.meta_url or f"sqlite:///{self.data_dir / 'meta.db'}"


def describe() -> list[tuple[str, str, str, str]]:
    """(env var, flag, default, help) of every setting, in declaration order."""
    rows = []
    for f in dataclasses.fields(Settings):
        default = f.default
        rows.append((env_name(f.name), flag_name(f.name), str(default), str(f.metadata["help"])))
    return rows
