"""``svcm nodes list|forget``: the watermark rows of several nodes on one ClickHouse server
(svc.cluster.watermarks; docs/operations.md, Several nodes)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from svc.cli.common import Context, command, connection_options, group, output_options

PATH = "/internal/nodes"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    _, nodes = group(
        sub,
        "nodes",
        summary="several nodes: list their watermark rows, delete a removed node's",
        description="With several nodes on one ClickHouse server, each node writes a "
        "watermark row to the metadata\nstore (every event it received before that time is "
        "loaded) and deletes it when it stops\ncleanly; the background jobs wait for the "
        "least. A node removed without stopping keeps its\nrow, and holds the jobs back, "
        "until the row is deleted. Needs the admin token; ask any\nnode (docs/operations.md, "
        "Several nodes).",
        examples=["svcm nodes list", "svcm nodes forget node-3"],
    )
    command(
        nodes,
        "list",
        summary="list the nodes' watermark rows",
        description="Every node's row: its id, its watermark and how far behind now, when it "
        "last wrote it and how\nlong ago. A live node writes it at each housekeeping tick; "
        "STATE is `answering` for the node\nthat answered, `alive` for a row written within "
        "the lease period (or three ticks), `silent`\nfor the others: a node down, or removed "
        "without stopping.",
        examples=["svcm nodes list", "svcm nodes list --json | jq -r '.nodes[].id'"],
        handler=run_list,
        parents=parents,
        aliases=["ls"],
    )
    p = command(
        nodes,
        "forget",
        summary="delete the watermark row of a node removed without stopping",
        description="Delete a node's row, so that the jobs (rollups, the lake, reports) no "
        "longer wait for it. Do\nit once the node is gone for good and its spool is lost, or "
        "was loaded by a node started\nwith its SVC_NODE_ID on a copy of its data directory. "
        "Refused for the node answering and,\nwithout --force, for a live node (a row written "
        "within the lease period): a live node\nwrites its row again at its next tick.",
        examples=["svcm nodes forget node-3", "svcm nodes forget node-3 --force --json"],
        handler=run_forget,
        parents=parents,
    )
    p.add_argument("node", metavar="NODE_ID", help="the node's SVC_NODE_ID")
    p.add_argument(
        "--force", action="store_true", help="delete it even if the node wrote it recently"
    )


def run_list(ctx: Context) -> int:
    doc = ctx.api().get(PATH)
    if ctx.json:
        ctx.out.json(doc)
        return 0
    tty = ctx.out.stdout_tty
    rows = [_columns(n, tty) for n in doc.get("nodes", [])]
    ctx.out.table(
        ["NODE", "WATERMARK", "BEHIND", "UPDATED", "AGE", "STATE"],
        rows,
        right=["BEHIND", "AGE"],
        empty="no watermark rows (one node, or none running)",
    )
    return 0


def run_forget(ctx: Context) -> int:
    params = {"force": "true"} if ctx.opt("force") else None
    doc = ctx.api().request(
        "DELETE", PATH + "/" + quote(str(ctx.opt("node")), safe=""), params=params
    )
    if ctx.json:
        ctx.out.json(doc)
        return 0
    row = doc["deleted"]
    ctx.out.done(
        f"deleted the row of {row['id']} (watermark {_time(row['loadedThroughMs'], True)}, "
        f"written {row['ageSeconds']} s ago)"
    )
    return 0


def _columns(node: dict[str, Any], tty: bool) -> list[Any]:
    state = "answering" if node["answering"] else ("alive" if node["alive"] else "silent")
    return [
        node["id"],
        _time(node["loadedThroughMs"], tty),
        f"{node['behindSeconds']} s" if tty else node["behindSeconds"],
        _time(node["updatedAtMs"], tty),
        f"{node['ageSeconds']} s" if tty else node["ageSeconds"],
        state,
    ]


def _time(ms: int, tty: bool) -> str:
    """A UTC time: ISO 8601 with milliseconds, or to the second for people."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    if tty:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
