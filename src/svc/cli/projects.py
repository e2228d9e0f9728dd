"""``svcm projects create|list|show|update|delete`` and ``svcm keys create|list|revoke|rotate``."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from svc.cli.common import (
    Context,
    command,
    connection_options,
    group,
    output_options,
    project_id,
    project_option,
)
from svc.cli.errors import UsageError
from svc.cli.output import text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    _, projects = group(
        sub,
        "projects",
        summary="create, list, show, change and delete projects",
        description="Projects are tenant workspaces (svc_proj_<name>), each with its own keys "
        "and events.\nCreating, listing and deleting projects needs the admin token; a "
        "project's secret key may\nshow and update its own project. PROJECT is an id "
        "(svc_proj_acme) or a name (acme).",
        examples=["svcm projects create acme --domain acme.com", "svcm projects list"],
    )
    p = command(
        projects,
        "create",
        summary="create a project and its public and secret keys (shown once)",
        description="Create a project with a public key (for web pages) and a secret key (for "
        "servers and\nreading); both are shown once.",
        examples=[
            "svcm projects create acme",
            "svcm projects create shop --timezone Europe/Berlin --domain shop.example "
            "--domain www.shop.example",
            "svcm projects create acme --json | jq -r .keys.secret",
        ],
        handler=run_create,
        parents=parents,
    )
    p.add_argument("name", help="1-40 characters of a-z, 0-9 and -")
    p.add_argument("--timezone", metavar="ZONE", help="IANA time zone of its days (default UTC)")
    p.add_argument(
        "--domain", action="append", metavar="HOST", help="a host name of the site (repeatable)"
    )

    command(
        projects,
        "list",
        summary="list the projects",
        description="Every project (admin token), or the key's own project (secret key).",
        examples=["svcm projects list", "svcm projects list --json | jq -r '.projects[].id'"],
        handler=run_list,
        parents=parents,
        aliases=["ls"],
    )

    p = command(
        projects,
        "show",
        summary="show a project, its keys and this month's usage",
        description="A project's settings, its keys (never the clear keys) and the events "
        "stored this month.",
        examples=["svcm projects show acme", "svcm projects show svc_proj_acme --json"],
        handler=run_show,
        parents=parents,
    )
    p.add_argument("project", metavar="PROJECT", help="project id or name")

    p = command(
        projects,
        "update",
        summary="change a project's time zone, domains, plan or ingestion options",
        description="Change what is given and keep the rest. The ingestion options drop events "
        "from address\nranges, on paths, or (with --only-own-domains yes) on other hosts "
        "than the project's domains.",
        examples=[
            "svcm projects update acme --timezone America/New_York",
            "svcm projects update acme --domain acme.com --domain shop.acme.com",
            "svcm projects update acme --exclude-address 10.0.0.0/8 --exclude-path '/admin/*'",
            "svcm projects update acme --plan pro   # admin token only",
        ],
        handler=run_update,
        parents=parents,
    )
    p.add_argument("project", metavar="PROJECT", help="project id or name")
    p.add_argument("--timezone", metavar="ZONE", help="IANA time zone")
    p.add_argument(
        "--domain",
        action="append",
        metavar="HOST",
        help="the project's host names (repeatable; replaces the list)",
    )
    p.add_argument("--no-domains", action="store_true", help="remove every domain")
    p.add_argument("--plan", metavar="PLAN", help="plan name (admin token only)")
    p.add_argument(
        "--exclude-address",
        action="append",
        metavar="CIDR",
        help="drop events from this address range (repeatable; replaces the list)",
    )
    p.add_argument(
        "--exclude-path",
        action="append",
        metavar="GLOB",
        help="drop events on paths matching this glob, like /admin/* (repeatable; replaces)",
    )
    p.add_argument(
        "--only-own-domains",
        choices=["yes", "no"],
        help="drop events whose host is not one of the project's domains",
    )
    p.add_argument(
        "--keep-data-centres",
        choices=["yes", "no"],
        help="store events from data-centre addresses (SVC_DATACENTRE_RANGES); no: drop them",
    )
    p.add_argument("--clear-exclusions", action="store_true", help="remove every exclusion option")

    p = command(
        projects,
        "delete",
        summary="delete a project, its keys and all its events",
        description="Delete a project with its keys and every event it stored. This cannot "
        "be undone. Asks\nfirst on a terminal; elsewhere --yes is required.",
        examples=["svcm projects delete acme", "svcm projects delete acme --yes"],
        handler=run_delete,
        parents=parents,
        aliases=["rm"],
    )
    p.add_argument("project", metavar="PROJECT", help="project id or name")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask")

    _, keys = group(
        sub,
        "keys",
        summary="create, list, revoke and rotate a project's API keys",
        description="A project's keys: public keys (svc_live_..., ingest only, safe in web "
        "pages), secret keys\n(ingest, read, manage) and share tokens (svc_share_..., read "
        "only). Clear keys are shown\nonce, when made. Needs the admin token or the "
        "project's secret key.",
        examples=["svcm keys list -p acme", "svcm keys rotate key_AbC123 -p acme"],
    )
    p = command(
        keys,
        "list",
        summary="list a project's keys",
        description="Every key of the project, revoked ones too: id, kind, a recognisable "
        "hint, scopes, use.",
        examples=["svcm keys list -p acme", "svcm keys list -p acme --json"],
        handler=run_keys_list,
        parents=parents,
        aliases=["ls"],
    )
    project_option(p)

    p = command(
        keys,
        "create",
        summary="create a key (shown once)",
        description="Create a key of a kind; the clear key is printed once (alone on stdout "
        "when it is not a\nterminal).",
        examples=[
            "svcm keys create -p acme --kind secret",
            "KEY=$(svcm keys create -p acme --kind public)",
        ],
        handler=run_keys_create,
        parents=parents,
    )
    project_option(p)
    p.add_argument(
        "--kind",
        choices=["public", "secret", "share"],
        default="public",
        help="public (ingest only, default), secret (ingest, read, manage) or share (read only)",
    )

    p = command(
        keys,
        "revoke",
        summary="revoke a key at once",
        description="Revoke a key: requests with it are refused from now on.",
        examples=["svcm keys revoke key_AbC123 -p acme"],
        handler=run_keys_revoke,
        parents=parents,
    )
    project_option(p)
    p.add_argument("key_id", metavar="KEY_ID", help="the key's id (key_...), see `svcm keys list`")

    p = command(
        keys,
        "rotate",
        summary="replace a key with a new one of the same kind (shown once)",
        description="Create a new key of the same kind and revoke the old one, in one step. "
        "The new key is\nprinted once.",
        examples=[
            "svcm keys rotate key_AbC123 -p acme",
            "NEW=$(svcm keys rotate key_AbC123 -p acme)",
        ],
        handler=run_keys_rotate,
        parents=parents,
    )
    project_option(p)
    p.add_argument("key_id", metavar="KEY_ID", help="the key's id (key_...)")


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(p, safe="") for p in parts)


def _project_pairs(p: dict[str, Any]) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = [
        ("id", p.get("id")),
        ("name", p.get("name")),
        ("timezone", p.get("timezone")),
        ("domains", p.get("domains")),
        ("plan", p.get("plan")),
    ]
    options = p.get("options") or {}
    if options.get("excludeAddresses"):
        pairs.append(("excluded addresses", options["excludeAddresses"]))
    if options.get("excludePaths"):
        pairs.append(("excluded paths", options["excludePaths"]))
    if "onlyOwnDomains" in options:
        pairs.append(("only own domains", bool(options["onlyOwnDomains"])))
    if "keepDataCentres" in options:
        pairs.append(("keep data centres", bool(options["keepDataCentres"])))
    pairs += [("created", p.get("createdAt")), ("updated", p.get("updatedAt"))]
    return pairs


def run_create(ctx: Context) -> int:
    body: dict[str, Any] = {"name": ctx.opt("name")}
    if ctx.opt("timezone"):
        body["timezone"] = ctx.opt("timezone")
    if ctx.opt("domain"):
        body["domains"] = ctx.opt("domain")
    api = ctx.api()
    record = api.request("POST", "/projects", body=body)
    if ctx.json:
        ctx.out.json(record)
        return 0
    keys = record.get("keys", {})
    if not ctx.out.stdout_tty:
        ctx.out.record(
            [
                ("id", record["id"]),
                ("public_key", keys.get("public")),
                ("secret_key", keys.get("secret")),
            ]
        )
        return 0
    ctx.out.done(f"Created project {record['id']}")
    ctx.out.record(_project_pairs(record))
    ctx.out.secret("Public key (for web pages)", keys.get("public", ""))
    ctx.out.secret("Secret key (for servers; keep it safe)", keys.get("secret", ""))
    ctx.out.note("Both keys are shown only now.")
    if api.mode == "http":
        ctx.out.note(
            f'Snippet: <script defer src="{api.where}/svc/js" data-key="{keys.get("public")}" '
            f'data-project="{record["id"]}"></script>'
        )
    return 0


def run_list(ctx: Context) -> int:
    doc = ctx.api().get("/projects")
    if ctx.json:
        ctx.out.json(doc)
        return 0
    rows = [
        [
            p["id"],
            p.get("name"),
            p.get("timezone"),
            p.get("domains"),
            p.get("plan"),
            when(p.get("createdAt"), ctx.out.stdout_tty),
        ]
        for p in doc.get("projects", [])
    ]
    ctx.out.table(
        ["ID", "NAME", "TIMEZONE", "DOMAINS", "PLAN", "CREATED"], rows, empty="no projects yet"
    )
    return 0


def _key_rows(keys: list[dict[str, Any]], tty: bool = False) -> list[list[Any]]:
    rows = []
    for k in keys:
        status = "active"
        if k.get("revokedAt"):
            status = "revoked" if tty else f"revoked {k['revokedAt']}"
        elif k.get("expiresAt"):
            status = f"expires {when(k['expiresAt'], tty)}"
        rows.append(
            [
                k.get("id"),
                k.get("kind"),
                k.get("hint"),
                k.get("scopes"),
                when(k.get("createdAt"), tty),
                when(k.get("lastUsedAt"), tty),
                status,
            ]
        )
    return rows


def when(iso: Any, tty: bool) -> Any:
    """An ISO time as it is, or shorter for people (``2024-06-01 12:30``)."""
    if not tty or not isinstance(iso, str) or len(iso) < 16:
        return iso
    return iso[:16].replace("T", " ")


KEY_COLUMNS = ["ID", "KIND", "HINT", "SCOPES", "CREATED", "LAST USED", "STATUS"]


def run_show(ctx: Context) -> int:
    pid = project_id(ctx.opt("project"))
    doc = ctx.api().get(_path("projects", pid))
    if ctx.json:
        ctx.out.json(doc)
        return 0
    pairs = _project_pairs(doc)
    usage = doc.get("usage") or {}
    if usage:
        events, quota = usage.get("events", 0), usage.get("quota")
        limit = f"{quota:,}" if isinstance(quota, int) and quota else "unlimited"
        pairs.append(("usage", f"{events:,} of {limit} events in {usage.get('month')}"))
    if not ctx.out.stdout_tty:
        ctx.out.record(pairs)
        for row in _key_rows(doc.get("keys", [])):
            ctx.out.line("key\t" + "\t".join(text(v) for v in row))
        return 0
    ctx.out.record(pairs, title=f"Project {doc.get('id')}")
    ctx.out.line("")
    ctx.out.table(KEY_COLUMNS, _key_rows(doc.get("keys", []), True), title="Keys", empty="no keys")
    return 0


def run_update(ctx: Context) -> int:
    pid = project_id(ctx.opt("project"))
    body: dict[str, Any] = {}
    if ctx.opt("timezone"):
        body["timezone"] = ctx.opt("timezone")
    if ctx.opt("domain") and ctx.opt("no_domains"):
        raise UsageError("give either --domain or --no-domains")
    if ctx.opt("domain"):
        body["domains"] = ctx.opt("domain")
    elif ctx.opt("no_domains"):
        body["domains"] = []
    if ctx.opt("plan"):
        body["plan"] = ctx.opt("plan")
    option_flags = (
        ctx.opt("exclude_address") is not None
        or ctx.opt("exclude_path") is not None
        or ctx.opt("only_own_domains") is not None
        or ctx.opt("keep_data_centres") is not None
    )
    api = ctx.api()
    if option_flags or ctx.opt("clear_exclusions"):
        options: dict[str, Any] = {}
        if not ctx.opt("clear_exclusions"):
            current = api.get(_path("projects", pid))
            options = dict(current.get("options") or {})
        if ctx.opt("exclude_address") is not None:
            options["excludeAddresses"] = ctx.opt("exclude_address")
        if ctx.opt("exclude_path") is not None:
            options["excludePaths"] = ctx.opt("exclude_path")
        if ctx.opt("only_own_domains") is not None:
            options["onlyOwnDomains"] = ctx.opt("only_own_domains") == "yes"
        if ctx.opt("keep_data_centres") is not None:
            options["keepDataCentres"] = ctx.opt("keep_data_centres") == "yes"
        body["options"] = options
    if not body:
        raise UsageError(
            "nothing to change: give --timezone, --domain, --no-domains, --plan, "
            "--exclude-address, --exclude-path, --only-own-domains, --keep-data-centres or "
            "--clear-exclusions"
        )
    record = api.request("PATCH", _path("projects", pid), body=body)
    if ctx.json:
        ctx.out.json(record)
        return 0
    ctx.out.done(f"Updated project {record.get('id', pid)}")
    ctx.out.record(_project_pairs(record))
    return 0


def run_delete(ctx: Context) -> int:
    pid = project_id(ctx.opt("project"))
    question = f"Delete {pid} with its keys and all its events? This cannot be undone"
    if not ctx.opt("yes") and not ctx.out.confirm(question):
        if ctx.out.stderr_tty:
            raise UsageError("not deleted")
        raise UsageError("deleting a project deletes its events: add --yes to confirm")
    doc = ctx.api().request("DELETE", _path("projects", pid))
    if ctx.json:
        ctx.out.json(doc)
    else:
        ctx.out.done(f"Deleted project {pid}")
    return 0


# keys ------------------------------------------------------------------------------------------


def run_keys_list(ctx: Context) -> int:
    pid = ctx.project()
    doc = ctx.api().get(_path("projects", pid, "keys"))
    if ctx.json:
        ctx.out.json(doc)
        return 0
    ctx.out.table(KEY_COLUMNS, _key_rows(doc.get("keys", []), ctx.out.stdout_tty), empty="no keys")
    return 0


def _show_new_key(ctx: Context, record: dict[str, Any], verb: str) -> None:
    if ctx.json:
        ctx.out.json(record)
        return
    kind = record.get("kind", "")
    replaced = f", replacing {record['replaces']} (now revoked)" if record.get("replaces") else ""
    ctx.out.done(f"{verb} {kind} key {record.get('id')}{replaced}")
    ctx.out.secret(f"{kind.capitalize()} key (shown once)", str(record.get("key", "")))


def run_keys_create(ctx: Context) -> int:
    pid = ctx.project()
    record = ctx.api().request(
        "POST", _path("projects", pid, "keys"), body={"kind": ctx.opt("kind")}
    )
    _show_new_key(ctx, record, "Created")
    return 0


def run_keys_revoke(ctx: Context) -> int:
    pid = ctx.project()
    record = ctx.api().request("DELETE", _path("projects", pid, "keys", ctx.opt("key_id")))
    if ctx.json:
        ctx.out.json(record)
    else:
        ctx.out.done(f"Revoked key {record.get('id')} ({record.get('hint')})")
    return 0


def run_keys_rotate(ctx: Context) -> int:
    pid = ctx.project()
    record = ctx.api().request("POST", _path("projects", pid, "keys", ctx.opt("key_id"), "rotate"))
    _show_new_key(ctx, record, "Rotated to")
    return 0
