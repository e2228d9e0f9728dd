"""svcm over HTTP against the real server: projects, keys, metrics, export, import, send,
health, tail, login, and how it fails."""

from __future__ import annotations

import csv
import io
import json
import stat
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import httpx
import pyarrow.parquet as pq

from tests.cli.conftest import Svcm
from tests.cli.support import ROOT, clean_env, parallel, unique
from tests.conftest import BROWSER_UA
from tests.support import Server


def test_projects_lifecycle(cli: Svcm) -> None:
    name = unique()
    created = cli("projects", "create", name, "--timezone", "Europe/Berlin", "--json").ok().json()
    pid = created["id"]
    assert pid == f"svc_proj_{name}"
    assert created["keys"]["public"].startswith("svc_live_")
    assert created["keys"]["secret"].startswith("svc_live_")

    listing, showing, nothing, twice, bad_name, unconfirmed = parallel(
        lambda: cli("projects", "list"),
        lambda: cli("projects", "show", name, "--json"),  # a name works as well as an id
        lambda: cli("projects", "update", pid),
        lambda: cli("projects", "create", name),
        lambda: cli("projects", "create", "Bad Name"),
        lambda: cli("projects", "delete", pid),  # not a terminal: no question, no delete
    )
    listed = listing.ok().stdout.splitlines()
    assert any(line.split("\t")[0] == pid for line in listed)  # plain: tab-separated, no header
    nothing.fails(2, "nothing to change")
    twice.fails(1, "exists already", "HTTP 409 conflict")
    bad_name.fails(1, "`name`", "HTTP 400")
    unconfirmed.fails(2, "--yes")

    shown = showing.ok().json()
    assert shown["timezone"] == "Europe/Berlin"
    assert sorted(k["kind"] for k in shown["keys"]) == ["public", "secret"]
    assert "usage" in shown

    updated = cli(
        "projects", "update", pid, "--domain", "Example.com", "--exclude-path", "/admin/*",
        "--only-own-domains", "yes", "--json",
    ).ok().json()  # fmt: skip
    assert updated["domains"] == ["example.com"]
    assert updated["options"] == {"excludePaths": ["/admin/*"], "onlyOwnDomains": True}
    # options not named are kept
    again = cli(
        "projects", "update", pid, "--exclude-address", "10.0.0.0/8", "--keep-data-centres", "yes",
        "--json",
    ).ok().json()  # fmt: skip
    assert again["options"]["excludePaths"] == ["/admin/*"]
    assert again["options"]["excludeAddresses"] == ["10.0.0.0/8"]
    assert again["options"]["keepDataCentres"] is True

    cli("projects", "delete", pid, "--yes").ok()
    cli("projects", "show", pid).fails(1, f"no project '{pid}'", "HTTP 404 not_found")


def test_keys_create_rotate_revoke_and_secret_key_login(cli: Svcm, tmp_path: Path) -> None:
    pid = cli("projects", "create", unique(), "--json").ok().json()["id"]
    made = cli("keys", "create", "-p", pid, "--kind", "secret")
    secret = made.ok().stdout.strip()  # piped: the key alone
    assert secret.startswith("svc_live_") and "\n" not in secret

    keys = cli("keys", "list", "-p", pid, "--json").ok().json()["keys"]
    assert len(keys) == 3
    public = next(k for k in keys if k["kind"] == "public")

    rotated = cli("keys", "rotate", public["id"], "-p", pid, "--json").ok().json()
    assert rotated["replaces"] == public["id"] and rotated["key"].startswith("svc_live_")
    cli("keys", "rotate", public["id"], "-p", pid).fails(1, "revoked already", "409")
    revoked = cli("keys", "revoke", rotated["id"], "-p", pid, "--json").ok().json()
    assert revoked["revokedAt"]

    # With the project's secret key the project is implied and only it is visible.
    as_key = {"SVC_TOKEN": secret}
    listed = cli("projects", "list", "--json", **as_key).ok().json()["projects"]
    assert [p["id"] for p in listed] == [pid]
    states = cli("keys", "list", **as_key).ok().stdout
    assert states.count("revoked") == 2 and states.count("active") == 2
    cli("projects", "delete", pid, "--yes", **as_key).fails(1, "only the admin token", "403")


def test_send_then_metrics_totals_breakdowns_series_filters(cli: Svcm, server: Server) -> None:
    created = cli("projects", "create", unique(), "--json").ok().json()
    pid = created["id"]
    cli("send", "-p", pid, "page_view", "https://shop.example/a?utm_source=News").ok()
    cli("send", "-p", pid, "page_view", "https://shop.example/b", "--session-id", "s2").ok()
    cli("send", "-p", pid, "signup", "/b", "--session-id", "s2", "--prop", "plan=pro").ok()
    # a public key sends for its own project, without naming it
    by_key = cli("send", "page_view", "/c", SVC_TOKEN=created["keys"]["public"]).ok()
    assert "to the key's project" in by_key.stderr
    server.wait_loaded()

    t = ("-p", pid, "--from", "today")
    results = parallel(
        lambda: cli("metrics", *t, "--json"),
        lambda: cli("metrics", "-p", pid, "--from", "1d"),
        lambda: cli("metrics", *t, "--by", "page", "--csv"),
        lambda: cli("metrics", *t, "--by", "prop:plan", "--json"),
        lambda: cli("metrics", *t, "--filter", "page=/a", "--json"),
        lambda: cli("metrics", *t, "--filter", "page:is_not:/a", "--json"),
        lambda: cli("metrics", *t, "--interval", "day", "--json"),
        lambda: cli("metrics", *t, "--compare", "previous_year", "--json"),
        lambda: cli("metrics", *t, "--filter", "bogus:is:x"),
        lambda: cli("metrics", "-p", pid, "--from", "someday"),
        lambda: cli("metrics", *t, "--filter", "page"),
        lambda: cli("metrics", *t, "--by", "page", "--interval", "day"),
        lambda: cli("metrics", *t, "--by", "page", "--compare", "previous_period", "--csv"),
        lambda: cli("metrics", *t, "--interval", "day", "--compare", "previous_period"),
    )
    totals, plain, by_page, by_prop, filtered, negated, series, compared = (
        r.ok() for r in results[:8]
    )
    t_doc = totals.json()
    # /a and /c come from the same address and user agent: one derived session
    assert (t_doc["pageviews"], t_doc["events"], t_doc["sessions"]) == (3, 4, 2)
    assert t_doc["trafficSources"] == {"news": 1, "direct": 1}

    pairs = dict(line.split("\t")[:2] for line in plain.stdout.splitlines())
    assert pairs["pageviews"] == "3" and pairs["source:news"] == "1"

    lines = by_page.stdout.splitlines()
    assert lines[0] == "value,visitors,sessions,pageviews,events,bounceRate,avgSessionDuration"
    assert sorted(line.split(",")[0] for line in lines[1:]) == ["/a", "/b", "/c"]
    assert [r["value"] for r in by_prop.json()["rows"]] == ["pro"]
    assert filtered.json()["pageviews"] == 1 and negated.json()["pageviews"] == 2
    assert sum(p["pageviews"] for p in series.json()["points"]) == 3
    assert compared.json()["compare"]["pageviews"] == 0

    bogus, someday, no_op, both, by_compared, series_compared = results[8:]
    bogus.fails(1, "unknown dimension 'bogus'", "HTTP 400")
    someday.fails(2, "--from", "YYYY-MM-DD")
    no_op.fails(2, "DIM:OP:VALUE")
    both.fails(2, "either --by or --interval")
    # a compared breakdown: each figure of the row in the other range, and its change (none:
    # yesterday had nothing of this project)
    header, *compared_rows = by_compared.ok().stdout.splitlines()
    assert header.startswith("value,visitors,sessions,") and header.endswith(
        ",previous_avgSessionDuration,change_avgSessionDuration"
    )
    assert "previous_pageviews,change_pageviews" in header
    page_a = next(r.split(",") for r in compared_rows if r.startswith("/a,"))
    columns = header.split(",")
    assert page_a[columns.index("previous_pageviews")] == "0"
    assert page_a[columns.index("change_pageviews")] == ""
    series_compared.fails(2, "not with --interval")


def test_export_ndjson_csv_parquet(cli: Svcm, server: Server, tmp_path: Path) -> None:
    created = cli("projects", "create", unique(), "--json").ok().json()
    pid, key = created["id"], created["keys"]["public"]
    events = [
        {"event": "page_view", "url": f"https://x.example/p{i}", "properties": {"n": i}}
        for i in range(5)
    ]
    r = httpx.post(
        server.url + "/analytics",
        json=events,
        headers={"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA},
    )
    assert r.status_code == 200 and r.json()["accepted"] == 5, r.text
    server.wait_loaded()

    out, parquet = tmp_path / "events.ndjson", tmp_path / "events.parquet"
    bad = tmp_path / "bad.ndjson"
    done, as_csv, _, failed = parallel(
        lambda: cli("export", "-p", pid, "--from", "today", "-o", str(out)),
        lambda: cli("export", "-p", pid, "--from", "today", "--format", "csv"),
        lambda: cli("export", "-p", pid, "--from", "today", "-o", str(parquet)),  # by extension
        lambda: cli("export", "-p", "nope-" + unique(), "--from", "today", "-o", str(bad)),
    )
    assert "Exported 5 events" in done.ok().stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["url"] for row in rows) == [e["url"] for e in events]

    csv_text = as_csv.ok().stdout
    assert csv_text.splitlines()[0].startswith('"ts_ms","event","url"')
    assert len(csv_text.splitlines()) == 6
    # properties as JSON, not ClickHouse's map text ({'n':'0'})
    props = [json.loads(r["properties"]) for r in csv.DictReader(io.StringIO(csv_text))]
    assert sorted(props, key=str) == [{"n": str(i)} for i in range(5)]
    assert pq.read_table(parquet).num_rows == 5

    failed.fails(1, "HTTP 404")  # a failed export leaves no file behind
    assert not bad.exists() and not list(tmp_path.glob(".*.part"))

    # svc's CSV export piped into another project's import (stdin is read as a file)
    copy = cli("projects", "create", unique(), "--json").ok().json()["id"]
    imported = cli("import", "-p", copy, "-", "--json", stdin=csv_text).ok().json()
    assert (imported["files"], imported["imported"]) == ([{"file": "<stdin>", "format": "csv"}], 5)


def test_import_over_http_is_idempotent_and_refuses_history(
    cli: Svcm, server: Server, tmp_path: Path
) -> None:
    pid = cli("projects", "create", unique(), "--json").ok().json()["id"]
    now = int(time.time() * 1000)
    lines = [
        {
            "event": "page_view",
            "url": "https://y.example/",
            "ts": now - 3_600_000,
            "sessionId": "a",
        },
        {
            "event": "page_view",
            "url": "https://y.example/x",
            "ts": now - 3_500_000,
            "sessionId": "a",
        },
        {"event": "page_view", "url": "https://y.example/old", "ts": now - 10 * 86_400_000},
        {"event": "", "url": "https://y.example/"},
        {
            "event": "signup",
            "url": "/s",
            "ts": now - 1000,
            "sessionId": "b",
            "properties": {"p": 1},
        },
    ]
    path = tmp_path / "events.ndjson"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")

    first = cli("import", "-p", pid, str(path), "--json")
    assert first.status == 4, first.stderr  # finished, some rows refused
    summary = first.json()
    assert (summary["read"], summary["imported"], summary["refused"]) == (6, 3, 3)
    reasons = {r["reason"]: r for r in summary["reasons"]}
    old = next(r for r in reasons if "older than 7 days" in r)
    assert "--data-dir" in old and reasons[old]["examples"] == ["events.ndjson:3"]
    assert any("`event`" in r for r in reasons)
    assert any("not valid JSON" in r for r in reasons)

    # Run twice: nothing doubles. The rows stored are read from GET /export, which sees what
    # the loader has moved from the spool; rows still in it would be dropped by the service's
    # event-id filter instead (counted as dropped, not skipped), so wait for the load first.
    server.wait_loaded()
    again = cli("import", "-p", pid, str(path), "--json").json()
    assert (again["imported"], again["skipped"], again["dropped"]) == (0, 3, 0)
    server.wait_loaded()

    stored = cli("export", "-p", pid, "--from", "2d").ok().stdout.splitlines()
    assert len(stored) == 3
    rows = [json.loads(line) for line in stored]
    assert all(row["event_id"].startswith("imp_") for row in rows)
    assert {row["url"] for row in rows} == {"https://y.example/", "https://y.example/x", "/s"}
    assert len({row["session_id"] for row in rows}) == 2
    assert len({row["visitor_id"] for row in rows}) == 2  # one stand-in address per visitor

    # Summary for people: one line, reasons with row numbers, on stderr.
    human = cli("import", "-p", pid, str(path))
    assert human.status == 4 and "skipped 3 stored already" in human.stderr
    assert "events.ndjson:3" in human.stderr


def test_health(cli: Svcm, bare: Svcm, server: Server) -> None:
    doc = cli("health", "--json").ok().json()
    assert doc["ready"] is True and "pipeline" in doc
    # /health needs no credential
    plain = bare("health", "--url", server.url).ok().stdout
    assert "status\tok (ready)" in plain and "event store\tchdb: reachable" in plain


def test_tail_prints_new_events(cli: Svcm, server: Server, tmp_path: Path) -> None:
    created = cli("projects", "create", unique(), "--json").ok().json()
    env = clean_env(tmp_path / "c.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc", "tail", "-p", created["id"], "--json", "--interval", "0.2",
         "--limit", "2", "--timeout", "40"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
    )  # fmt: skip
    try:
        time.sleep(1.0)
        for path in ("/one", "/two"):
            r = httpx.post(
                server.url + "/analytics",
                json={"event": "page_view", "url": path},
                headers={"Authorization": f"Bearer {created['keys']['public']}",
                         "User-Agent": BROWSER_UA},
            )  # fmt: skip
            assert r.status_code == 200
        out, err = proc.communicate(timeout=45)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [json.loads(line)["url"] for line in out.splitlines()] == ["/one", "/two"]


def test_login_saves_a_private_config_and_logout_forgets_it(
    bare: Svcm, cli: Svcm, server: Server, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    bare("login", "--url", server.url, stdin="svc_live_" + "x" * 32 + "\n").fails(
        3, "not saved", "HTTP 401"
    )
    assert not config.exists()

    admin = bare("login", "--url", server.url, stdin=server.admin_token + "\n").ok()
    assert f"Logged in to {server.url} with an admin token;" in admin.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert server.admin_token in config.read_text()
    listed = bare("projects", "list", "--json").ok().json()  # no flags, no environment
    assert "projects" in listed
    # The saved token is never sent to another host.
    seen: list[str | None] = []

    class Capture(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"projects": []}')

        def log_message(self, *args: object) -> None:
            pass

    other = HTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        bare("projects", "list", "--url", f"http://127.0.0.1:{other.server_port}").ok()
    finally:
        other.shutdown()
    assert seen == [None]

    # A secret key: its project becomes the default --project.
    created = cli("projects", "create", unique(), "--json").ok().json()
    secret = bare("login", "--url", server.url, "--token", created["keys"]["secret"]).ok()
    assert f"with a secret key (project {created['id']})" in secret.stderr
    assert f'project = "{created["id"]}"' in config.read_text()
    assert bare("keys", "list", "--json").ok().json()["keys"]

    bare("logout").ok()
    assert not config.exists()
    bare("projects", "list").fails(3, "no service to talk to")


def test_errors_are_one_line_with_a_status(bare: Svcm, cli: Svcm, server: Server) -> None:
    unknown, missing, unreachable, debug, both = parallel(
        lambda: cli("projects", "list", SVC_TOKEN="svc_admin_" + "y" * 32),
        lambda: bare("projects", "list", "--url", server.url),
        lambda: bare("health", "--url", "http://127.0.0.1:9"),
        lambda: bare("health", "--url", "http://127.0.0.1:9", "--debug"),
        lambda: bare("projects", "list", "--url", "x", "--data-dir", "y"),
    )
    unknown.fails(3, "unknown, revoked or expired", "HTTP 401 invalid_api_key", "svcm login")
    missing.fails(3, "HTTP 401 missing_api_key")
    unreachable.fails(3, "cannot reach the service")
    assert debug.status == 3 and "Traceback" in debug.stderr  # --debug shows it
    both.fails(2, "either --url or --data-dir")


def test_deploy_vpc_is_not_available(bare: Svcm) -> None:
    # --edge is tested in tests/edge/test_deploy.py
    edge, vpc, unknown = parallel(
        lambda: bare("deploy", "--edge", "cloudflare-workers", "--project", "svc_proj_acme"),
        lambda: bare("deploy", "--vpc", "--project", "svc_proj_acme"),
        lambda: bare("deploy", "--edge", "heroku"),
    )
    edge.fails(2, "give --origin")
    vpc.fails(1, "private-network (VPC) deployment is not available")
    assert unknown.status == 2 and "invalid choice" in unknown.stderr
