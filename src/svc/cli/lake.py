"""``svcm lake export``: write a day to the raw-event lake now (the running service writes)."""

from __future__ import annotations

import argparse

from svc.cli.common import Context, command, connection_options, group, output_options, project_id
from svc.cli.connection import error_of

PATH = "/internal/lake"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _, lake = group(
        sub,
        "lake",
        summary="the raw-event lake: each project's events of each UTC day as Parquet",
        description="The service writes each finished UTC day of each project's events to "
        "SVC_LAKE_URL (a directory\nor s3://bucket/prefix) as "
        "project=<id>/day=<YYYY-MM-DD>/events.parquet with a manifest.json,\nand writes a day "
        "again when late events change it (docs/operations.md, Raw-event lake).",
        examples=["svcm lake export --day 2026-11-23"],
    )
    p = command(
        lake,
        "export",
        summary="write a UTC day to the lake now (every project, or one)",
        description="Ask the service to write a finished UTC day to its lake now, whether or "
        "not its schedule\nhas (a rerun gives the same file when the day's events are the "
        "same). Needs the admin\ntoken and SVC_LAKE_URL on the service.",
        examples=[
            "svcm lake export --day 2026-11-23",
            "svcm lake export --day 2026-11-23 --project acme --json",
        ],
        handler=run_export,
        parents=[connection_options(), output_options()],
    )
    p.add_argument("--day", required=True, metavar="YYYY-MM-DD", help="the UTC day (over)")
    p.add_argument("--project", metavar="PROJECT", help="only this project (id or name)")


def run_export(ctx: Context) -> int:
    body: dict[str, str] = {"day": str(ctx.opt("day"))}
    if ctx.opt("project"):
        body["project"] = project_id(str(ctx.opt("project")))
    resp = ctx.api().send("POST", PATH, body=body, timeout=None)
    if resp.status_code >= 400:
        raise error_of(resp)
    doc = resp.json()
    if ctx.json:
        ctx.out.json(doc)
        return 0
    if not doc["written"]:
        ctx.out.note(f"no events on {doc['day']}: nothing written")
        return 0
    rows = [
        [m["project"], m["day"], m["rows"], m["bytes"], m["sha256"][:16]] for m in doc["written"]
    ]
    ctx.out.table(["project", "day", "events", "bytes", "sha256"], rows)
    ctx.out.done(f"wrote {len(rows)} day file(s) to {doc['url']}")
    return 0
