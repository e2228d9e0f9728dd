"""``svcm send``, ``svcm health`` and ``svcm tail``."""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from datetime import UTC, datetime
from typing import Any

from svc.cli.common import Context, command, connection_options, output_options, project_option
from svc.cli.errors import EXIT_FAILED, CliError, UsageError
from svc.imports.rows import parse_time


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    p = command(
        sub,
        "send",
        summary="send one event (for trying things)",
        description="Send one event to POST /analytics, as a page or a server would, and say "
        "whether it was\nstored. With the admin token the event names its project; a key "
        "sends for its own.",
        examples=[
            "svcm send -p acme page_view https://acme.com/pricing",
            "svcm send -p acme signup /welcome --prop plan=pro --prop source=ad",
            'svcm send -p acme purchase /checkout --props \'{"value": 49, "currency": "EUR"}\'',
        ],
        handler=run_send,
        parents=parents,
    )
    project_option(p)
    p.add_argument("event", metavar="EVENT", help="event name; page_view is a page view")
    p.add_argument("page", metavar="URL", help="the page's URL or path")
    p.add_argument(
        "--prop",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a custom property (repeatable)",
    )
    p.add_argument("--props", metavar="JSON", help="custom properties as a JSON object")
    p.add_argument("--referrer", metavar="URL", help="the page's referrer")
    p.add_argument("--session-id", metavar="ID", help="the client's session id")
    p.add_argument("--event-id", metavar="ID", help="an id to send the event only once")
    p.add_argument("--ts", metavar="TIME", help="event time: ms since the epoch or ISO 8601")
    p.add_argument(
        "--user-agent", metavar="UA", help="the end user's user agent (with a secret key)"
    )
    p.add_argument("--ip", metavar="ADDRESS", help="the end user's address (with a secret key)")

    command(
        sub,
        "health",
        summary="is the service ready? pipeline, stores and node",
        description="The service's health: readiness, the ingestion pipeline (backlog, "
        "oldest waiting event,\ndropped events), the event store and metadata store, and the "
        "node. Exits 1 when the\nservice cannot accept events. Needs no credential.",
        examples=["svcm health --url http://127.0.0.1:8080", "svcm health --json | jq .pipeline"],
        handler=run_health,
        parents=parents,
    )

    p = command(
        sub,
        "tail",
        summary="follow a project's events as they arrive",
        description="Print a project's events as they are stored, newest last, until Ctrl-C. "
        "It polls GET /export\nfor today's events and shows the new ones (events are "
        "visible once loaded into the store,\nwithin about a second). Needs a running "
        "service (--url) and a credential that can read.",
        examples=[
            "svcm tail -p acme",
            "svcm tail -p acme --since 30m --json | jq -r .url",
            "svcm tail -p acme --limit 10 --timeout 60",
        ],
        handler=run_tail,
        parents=parents,
    )
    project_option(p)
    p.add_argument(
        "--since",
        default="5m",
        metavar="AGE",
        help="also show events of the last AGE at start: 30s, 5m (default), 2h",
    )
    p.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="poll every (default 2)"
    )
    p.add_argument("--limit", type=int, metavar="N", help="stop after N events")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="stop after this long")


# send ------------------------------------------------------------------------------------------


def _properties(ctx: Context) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if ctx.opt("props"):
        try:
            loaded = json.loads(ctx.opt("props"))
        except json.JSONDecodeError as exc:
            raise UsageError(f"--props is not valid JSON: {exc.msg}") from exc
        if not isinstance(loaded, dict):
            raise UsageError("--props must be a JSON object")
        props.update(loaded)
    for item in ctx.opt("prop") or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--prop {item!r}: write KEY=VALUE")
        props[key] = value
    return props


def run_send(ctx: Context) -> int:
    event: dict[str, Any] = {"event": ctx.opt("event"), "url": ctx.opt("page")}
    api = ctx.api()
    # A key sends for its own project (a public key may not even look it up).
    project = ctx.given_project()
    if project is None and (api.is_admin or not api.token):
        project = ctx.project()
    if project is not None:
        event["projectId"] = project
    props = _properties(ctx)
    if props:
        event["properties"] = props
    for flag, name in (
        ("referrer", "referrer"),
        ("session_id", "sessionId"),
        ("event_id", "eventId"),
        ("user_agent", "userAgent"),
        ("ip", "ip"),
    ):
        if ctx.opt(flag):
            event[name] = ctx.opt(flag)
    if ctx.opt("ts"):
        try:
            event["ts"] = parse_time(ctx.opt("ts"))
        except ValueError:
            raise UsageError(
                f"--ts {ctx.opt('ts')!r}: give ms since the epoch or ISO 8601"
            ) from None
    headers = {"User-Agent": ctx.opt("user_agent")} if ctx.opt("user_agent") else None
    resp = api.send("POST", "/analytics", body=event, headers=headers)
    if resp.status_code >= 400:
        from svc.cli.connection import error_of

        raise error_of(resp)
    ack = resp.json()
    dropped = resp.headers.get("x-svc-dropped")
    if ctx.json:
        ctx.out.json({**ack, "dropped": dropped})
    if dropped:
        raise CliError(
            f"the service took the event but dropped it on purpose: {dropped} "
            "(bots, excluded addresses or paths, or a repeated eventId are dropped)",
            EXIT_FAILED,
        )
    if not ctx.json:
        when = datetime.fromtimestamp(int(ack.get("ts", 0)) / 1000, UTC)
        target = project or "the key's project"
        ctx.out.done(
            f"Sent {event['event']} to {target} at {when.isoformat(timespec='milliseconds')}"
        )
    return 0


# health ----------------------------------------------------------------------------------------


def _uptime(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}d {h}h {m}m" if d else (f"{h}h {m}m" if h else f"{m}m {s}s")


def _store(part: dict[str, Any]) -> str:
    if not part:
        return "-"
    state = "reachable" if part.get("reachable") else "UNREACHABLE"
    latency = part.get("latencyMs")
    extra = f", {latency:.1f} ms" if isinstance(latency, int | float) else ""
    error = f" ({part['error']})" if part.get("error") else ""
    return f"{part.get('kind', '?')}: {state}{extra}{error}"


def run_health(ctx: Context) -> int:
    api = ctx.api()
    resp = api.send("GET", "/health", timeout=15)
    try:
        doc = resp.json()
    except ValueError:
        from svc.cli.connection import error_of

        raise error_of(resp) from None
    ready = resp.status_code == 200 and bool(doc.get("ready", True))
    if ctx.json:
        ctx.out.json(doc)
    else:
        p = doc.get("pipeline", {}) or {}
        node = doc.get("node", {}) or {}
        dropped = p.get("dropped") or {}
        dropped_text = (
            f"{p.get('droppedTotal', 0)} ("
            + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))
            + ")"
            if dropped
            else "0"
        )
        rss = node.get("memoryRssBytes")
        pairs = [
            ("status", f"{doc.get('status', '?')} ({'ready' if ready else 'NOT READY'})"),
            ("service", api.where),
            (
                "backlog",
                f"{p.get('backlogEvents', 0)} events in {p.get('backlogSegments', 0)} segments, "
                f"oldest waiting {p.get('oldestWaitingMs', 0)} ms",
            ),
            ("accepted", p.get("accepted")),
            ("dropped", dropped_text),
            ("rejected", sum((p.get("rejected") or {}).values())),
            ("loader", p.get("loaderError") or "ok"),
            ("spool", p.get("spoolError") or "ok"),
            ("event store", _store(doc.get("store", {}))),
            ("metadata", _store(doc.get("metadata", {}))),
            (
                "node",
                f"{node.get('id', '?')} · v{node.get('version', '?')} · up "
                f"{_uptime(float(node.get('uptimeSeconds', 0)))}"
                + (f" · {rss / 1048576:.0f} MB" if isinstance(rss, int) else ""),
            ),
        ]
        ctx.out.record(pairs)
    if not ready:
        if not ctx.json:
            raise CliError(f"the service at {api.where} is not ready (HTTP {resp.status_code})")
        return EXIT_FAILED
    return 0


# tail ------------------------------------------------------------------------------------------


def parse_age(text: str) -> float:
    text = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except (ValueError, IndexError):
        raise UsageError(f"--since {text!r}: write like 30s, 5m, 2h") from None


def _line(row: dict[str, Any]) -> list[Any]:
    ts = datetime.fromtimestamp(int(row.get("ts_ms", 0)) / 1000, UTC)
    where = ", ".join(
        v
        for v in (
            row.get("country"),
            row.get("device"),
            " ".join(x for x in (row.get("browser"), row.get("os")) if x),
        )
        if v
    )
    return [
        ts.isoformat(timespec="seconds").replace("+00:00", "Z"),
        row.get("event"),
        row.get("url"),
        row.get("source"),
        where,
        str(row.get("session_id", ""))[-8:],
    ]


def run_tail(ctx: Context) -> int:
    if ctx.direct:
        raise UsageError(
            "tail follows a running service: use --url (no events arrive in a data directory "
            "while svcm holds it)"
        )
    since = parse_age(ctx.opt("since"))
    interval = max(0.2, float(ctx.opt("interval")))
    limit: int | None = ctx.opt("limit")
    timeout: float | None = ctx.opt("timeout")
    project = ctx.project()
    api = ctx.api()
    started = time.monotonic()
    cutoff_ms = int((time.time() - since) * 1000)  # nothing older is shown
    seen: dict[bytes, int] = {}  # digest of a row -> its time (ms)
    shown = 0
    if not ctx.json:
        ctx.out.note(f"following {project} on {api.where} (Ctrl-C to stop)")
    try:
        while True:
            # Events arrive within seconds, late ones within minutes: the export starts on
            # the (UTC) day of 10 minutes ago, or of the cutoff when that is later.
            first_ms = max(cutoff_ms, int(time.time() * 1000) - 600_000)
            day = datetime.fromtimestamp(first_ms / 1000, UTC).date()
            day_start_ms = int(
                datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000
            )
            buffer = bytearray()
            api.download(
                "/export",
                [
                    ("from", day.isoformat()),
                    ("tz", "UTC"),
                    ("format", "ndjson"),
                    ("projectId", project),
                ],
                buffer.extend,
            )
            fresh: list[dict[str, Any]] = []
            for line in bytes(buffer).splitlines():
                if not line.strip():
                    continue
                digest = hashlib.blake2b(line, digest_size=12).digest()
                if digest in seen:
                    continue
                row = json.loads(line)
                ts = int(row.get("ts_ms") or 0)
                seen[digest] = ts
                if ts < cutoff_ms and int(row.get("received_ms") or 0) < cutoff_ms:
                    continue
                fresh.append(row)
            for digest in [d for d, ts in seen.items() if ts < day_start_ms]:
                del seen[digest]
            fresh.sort(key=lambda r: (int(r.get("ts_ms") or 0), str(r.get("event_id", ""))))
            for row in fresh:
                if ctx.json:
                    ctx.out.line(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
                else:
                    ctx.out.line("\t".join("" if v is None else str(v) for v in _line(row)))
                shown += 1
                if limit is not None and shown >= limit:
                    return 0
            if timeout is not None and time.monotonic() - started >= timeout:
                return 0
            time.sleep(interval)
    except KeyboardInterrupt:
        return 0
