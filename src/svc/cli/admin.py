"""``svcm init``, ``svcm migrate``, ``svcm login`` and ``svcm logout``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from svc.cli import config
from svc.cli.common import Context, command, output_options
from svc.cli.connection import HttpApi, ensure_not_in_use, is_data_dir
from svc.cli.errors import EXIT_UNREACHABLE, CliError, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    out = output_options()
    p = command(
        sub,
        "init",
        summary="create a data directory and its admin token (shown once)",
        description="Create a data directory: the metadata database, the event store and the "
        "spool, migrated to the\ncurrent schema, and an admin token. The token is printed "
        "once; only its hash is kept\n(<data dir>/admin_token.sha256). Running init again on "
        "a ready directory changes nothing.\nWith SVC_ADMIN_TOKEN set, that token is the admin "
        "token and none is generated.",
        examples=[
            "svcm init --data-dir /var/lib/svc",
            "TOKEN=$(svcm init --data-dir ./data)   # the token alone on stdout",
            "svcm init --data-dir ./data --new-admin-token   # replace a lost token",
            "svcm init --data-dir ./data --owner ada@example.com   # and the first owner",
        ],
        handler=run_init,
        parents=[out],
    )
    data_dir_option(p)
    p.add_argument(
        "--new-admin-token",
        action="store_true",
        help="replace the admin token of an existing data directory (restart the service after)",
    )
    p.add_argument(
        "--owner",
        metavar="EMAIL",
        help="also create the first owner's account and team (its password is asked for, or "
        "read from stdin)",
    )

    p = command(
        sub,
        "migrate",
        summary="bring a data directory's metadata and event store to the current schema",
        description="Apply the metadata and event store migrations not applied yet. The "
        "service does this itself\nat start-up; run it to upgrade a data directory ahead of "
        "time. No service may run on it.",
        examples=["svcm migrate --data-dir /var/lib/svc", "svcm migrate --json"],
        handler=run_migrate,
        parents=[out],
    )
    data_dir_option(p)

    p = command(
        sub,
        "login",
        summary="save a service URL and credential for the next commands",
        description="Check a credential against the service and save it with the URL in the "
        "config file\n($SVC_CONFIG, else ~/.config/svcm/config.toml), readable by you only "
        "(mode 0600).\nWithout --token the token is asked for on a terminal, or read from "
        "stdin. With a project's\nsecret key, its project becomes the default --project.",
        examples=[
            "svcm login --url https://analytics.example.com",
            'echo "$SVC_ADMIN_TOKEN" | svcm login --url http://127.0.0.1:8080',
            "svcm login --url http://127.0.0.1:8080 --token svc_live_...",
        ],
        handler=run_login,
        parents=[output_options()],
    )
    p.add_argument("--url", required=True, metavar="URL", help="the service's URL")
    p.add_argument("--token", metavar="TOKEN", help="admin token or secret key ('-': stdin)")
    p.add_argument("--no-verify", action="store_true", help="save without checking the token first")

    command(
        sub,
        "logout",
        summary="forget the saved URL and credential",
        description="Delete the config file written by `svcm login`.",
        examples=["svcm logout"],
        handler=run_logout,
        parents=[output_options(json=False)],
    )


def data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the data directory (env SVC_DATA_DIR; default ./data)",
    )


def _data_dir(ctx: Context) -> Path:
    return Path(ctx.opt("data_dir") or os.environ.get("SVC_DATA_DIR") or "data").expanduser()


def _migrate(data_dir: Path) -> dict[str, list[int]]:
    from svc.cli.connection import direct_settings
    from svc.meta.store import MetaStore
    from svc.storage.events import EventStore

    settings = direct_settings(data_dir)
    meta = MetaStore(settings.effective_meta_url)
    try:
        meta_applied = meta.migrate()
    except Exception as exc:
        raise CliError(f"cannot migrate the metadata database: {exc}") from exc
    finally:
        meta.close()
    store = EventStore(settings)
    try:
        store_applied = store.migrate()
    except Exception as exc:
        raise CliError(f"cannot migrate the event store: {exc}") from exc
    finally:
        store.close()
    return {"metadata": meta_applied, "events": store_applied}


def run_init(ctx: Context) -> int:
    from svc.auth import load_admin_token_hash
    from svc.cli.connection import direct_settings

    data_dir = _data_dir(ctx)
    existed = is_data_dir(data_dir)
    if existed:
        ensure_not_in_use(data_dir)
    settings = direct_settings(data_dir)
    token_file = data_dir / "admin_token.sha256"
    if ctx.opt("new_admin_token"):
        if settings.admin_token:
            raise UsageError("SVC_ADMIN_TOKEN is set: that is the admin token; unset it first")
        token_file.unlink(missing_ok=True)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _, token = load_admin_token_hash(data_dir, settings.admin_token)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:
        raise CliError(f"cannot create {data_dir}: {exc.strerror}") from exc
    applied = _migrate(data_dir)
    owner = None
    if ctx.opt("owner"):  # svc.cli.accounts: the first owner, in the metadata store
        from svc.cli.accounts import create_first_owner

        owner = create_first_owner(ctx, settings, str(ctx.opt("owner")))
    if ctx.json:
        ctx.out.json(
            {
                "dataDir": str(data_dir),
                "created": not existed,
                "adminToken": token,
                "migrations": applied,
                **({"owner": owner} if owner else {}),
            }
        )
        return 0
    verb = "Created" if not existed else "Checked"
    ctx.out.done(f"{verb} the data directory {data_dir}")
    if owner:
        ctx.out.done(
            f"Created the first owner {owner['account']['email']} of {owner['team']['name']}"
        )
    if token:
        ctx.out.secret("Admin token (shown once, keep it safe)", token)
        ctx.out.note(
            f"Next: svcm serve --data-dir {data_dir}, then svcm login --url http://127.0.0.1:8080"
        )
    elif settings.admin_token:
        ctx.out.note("The admin token is the one in SVC_ADMIN_TOKEN.")
    else:
        ctx.out.note(
            "The admin token was shown when it was made; lost it? svcm init --new-admin-token"
        )
    return 0


def run_migrate(ctx: Context) -> int:
    data_dir = _data_dir(ctx)
    if not is_data_dir(data_dir):
        raise CliError(
            f"{data_dir} is not an svc data directory (create one with `svcm init --data-dir "
            f"{data_dir}`)",
            EXIT_UNREACHABLE,
        )
    ensure_not_in_use(data_dir)
    applied = _migrate(data_dir)
    if ctx.json:
        ctx.out.json({"dataDir": str(data_dir), "applied": applied})
        return 0
    for part, versions in applied.items():
        if versions:
            ctx.out.done(f"{part}: applied {', '.join(map(str, versions))}")
        else:
            ctx.out.done(f"{part}: up to date")
    return 0


def _read_token(ctx: Context) -> str:
    given = ctx.opt("token")
    if given and given != "-":
        return str(given).strip()
    if given != "-" and sys.stdin.isatty():
        return ctx.out.ask("Admin token or secret key", password=True).strip()
    return sys.stdin.readline().strip()


def run_login(ctx: Context) -> int:
    url = config.normalize_url(ctx.opt("url"))
    token = _read_token(ctx)
    if not token:
        raise UsageError("no token given (--token, or type it, or pipe it on stdin)")
    if not token.startswith(("svc_admin_", "svc_live_", "svc_share_")):
        raise UsageError(
            "the token must be an admin token (svc_admin_...), a key (svc_live_...) or a share "
            "token (svc_share_...)"
        )
    values: dict[str, str] = {"url": url, "token": token}
    who = "token (not checked)"
    if not ctx.opt("no_verify"):
        api = HttpApi(url, token)
        try:
            who, project = _verify(ctx, api)
        finally:
            api.close()
        if project:
            values["project"] = project
    path = config.save(values)
    if ctx.json:
        ctx.out.json(
            {"url": url, "credential": who, "project": values.get("project"), "config": str(path)}
        )
    else:
        extra = f" (project {values['project']})" if values.get("project") else ""
        article = "an" if who.startswith(("a", "e", "i", "o", "u")) else "a"
        ctx.out.done(f"Logged in to {url} with {article} {who}{extra}; saved in {path}")
    return 0


def _verify(ctx: Context, api: HttpApi) -> tuple[str, str]:
    """What the credential is, and its project for a secret key."""
    resp = api.send("GET", "/projects")
    if resp.status_code == 200:
        if api.is_admin:
            return "admin token", ""
        projects: list[dict[str, Any]] = resp.json().get("projects", [])
        return "secret key", str(projects[0]["id"]) if len(projects) == 1 else ""
    if resp.status_code == 403 and api.token.startswith("svc_share_"):
        ctx.out.warn("a share token can only read: svcm metrics and svcm export, with --project")
        return "share token", ""
    if resp.status_code == 403 and not api.is_admin:
        ctx.out.warn("this is a public key: it can only send events (svcm send)")
        return "public key", ""
    from svc.cli.connection import error_of

    err = error_of(resp)
    raise CliError(f"not saved: {err.message}", err.status)


def run_logout(ctx: Context) -> int:
    path = config.config_path()
    if config.remove(path):
        ctx.out.done(f"Removed {path}")
    else:
        ctx.out.note(f"Nothing to do: {path} does not exist")
    return 0
