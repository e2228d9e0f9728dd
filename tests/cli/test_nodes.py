"""``svcm nodes``: the nodes' watermark rows, listed and a removed node's deleted, over HTTP
against the real server and its real metadata store (rows written as nodes write them)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import delete

from svc.meta import tables
from svc.meta.store import MetaStore
from svc.settings import Settings
from tests.cli.conftest import Svcm
from tests.cli.support import parallel
from tests.support import Server


@pytest.fixture
def meta(server: Server) -> Iterator[MetaStore]:
    """The session server's metadata store."""
    store = MetaStore(Settings(data_dir=server.data_dir).effective_meta_url)
    yield store
    store.close()


def write_row(meta: MetaStore, node_id: str, ago_s: float) -> int:
    """A node's row as its housekeeping writes it, ``ago_s`` seconds ago; its watermark."""
    updated = int((time.time() - ago_s) * 1000)
    with meta.engine.begin() as conn:
        conn.execute(
            tables.node_watermarks.insert().values(
                node_id=node_id, loaded_through_ms=updated - 2000, updated_at=updated
            )
        )
    return updated - 2000


def test_nodes_are_listed_and_a_removed_ones_row_forgotten(
    cli: Svcm, server: Server, meta: MetaStore
) -> None:
    tag = uuid.uuid4().hex[:8]
    gone, live = f"gone_{tag}", f"live_{tag}"
    gone_mark = write_row(meta, gone, ago_s=600)  # a node killed 10 minutes ago
    write_row(meta, live, ago_s=0)  # a node that wrote at its last tick
    here = httpx.get(server.url + "/health").json()["node"]["id"]
    try:
        listed, plain, alive = parallel(
            lambda: cli("nodes", "list", "--json"),
            lambda: cli("nodes", "ls"),
            lambda: cli("nodes", "forget", live),
        )
        doc = listed.ok().json()
        assert doc["node"] == here and doc["silentSeconds"] >= 30
        by_id = {n["id"]: n for n in doc["nodes"]}
        assert by_id[gone]["loadedThroughMs"] == gone_mark
        assert by_id[gone]["ageSeconds"] >= 599 and not by_id[gone]["alive"]
        assert by_id[live]["alive"] and not by_id[live]["answering"]
        lines = {line.split("\t")[0]: line.split("\t") for line in plain.ok().stdout.splitlines()}
        assert lines[gone][5] == "silent" and lines[live][5] == "alive"
        assert lines[gone][1].endswith("Z")  # piped: ISO 8601, UTC
        alive.fails(1, "alive", "HTTP 409 conflict")

        # written as SVC_NODE_ID was set (gone-<tag>): the row's id has `_` for the `-`
        forgot, forced = parallel(
            lambda: cli("nodes", "forget", f"gone-{tag}", "--json"),
            lambda: cli("nodes", "forget", live, "--force"),
        )
        assert forgot.ok().json()["deleted"]["id"] == gone
        assert forgot.json()["deleted"]["loadedThroughMs"] == gone_mark
        assert f"deleted the row of {live}" in forced.ok().stderr

        def forget(node: str, **params: str) -> httpx.Response:
            return httpx.delete(
                server.url + f"/internal/nodes/{node}", params=params, headers=server.admin()
            )

        own, again, bad = forget(here), forget(gone), forget(live, force="maybe")
        assert own.status_code == 409 and "the node answering" in own.json()["error"]["message"]
        assert again.status_code == 404 and again.json()["error"]["field"] == "node"
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "force"
        assert httpx.get(server.url + "/internal/nodes").status_code == 401
        left = httpx.get(server.url + "/internal/nodes", headers=server.admin()).json()["nodes"]
        assert not {n["id"] for n in left} & {gone, live}
    finally:
        with meta.engine.begin() as conn:
            conn.execute(
                delete(tables.node_watermarks).where(
                    tables.node_watermarks.c.node_id.in_([gone, live])
                )
            )
