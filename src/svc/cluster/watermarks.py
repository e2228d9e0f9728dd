"""The nodes' watermarks: a time before which every event a node received is in the store.

One node knows only its own (``Runtime.loaded_through_ms``: the oldest event in its spool or in
a request). The jobs that trust a watermark (rollups and snapshots: a day's version; the lake:
a day's ``receivedThroughMs``; mail: a report's period is complete) must not trust one node's
while another node's spool still holds older events: with several nodes they take the least of
every node's (:meth:`Watermarks.through`).

Each node writes its own to ``node_watermarks`` (its ``SVC_NODE_ID``, stable across restarts)
at start-up, before it takes events, and at each housekeeping tick, and deletes its row when it
stops, its spool loaded. A node killed keeps its row (its last watermark, older than every event
its spool holds) until it starts again and loads them: the jobs meanwhile hold back, and a day's
events loaded late are still found by the rollups' check of events received since a day's
version. A node removed for good without stopping has its row deleted by the operator
(:meth:`Watermarks.forget`, ``svcm nodes forget``; docs/operations.md, Several nodes).
A node's own figure is fresh; the others' are read at each tick, so a little older, which is
safe (a watermark only grows).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select, update

from svc.errors import Conflict, NotFound
from svc.meta import tables

log = logging.getLogger(__name__)
_t = tables.node_watermarks


def node_id_of(name: str) -> str:
    """The node id a name gives (``SVC_NODE_ID`` or the host name): every character not a
    letter or digit written ``_``, at most 40 characters."""
    cleaned = "".join(c if c.isalnum() else "_" for c in name)[:40]
    return cleaned or "node"


@dataclass(frozen=True)
class NodeRow:
    """One node's row: its watermark and when it last wrote it (ms since the epoch)."""

    node_id: str
    loaded_through_ms: int
    updated_ms: int


class Watermarks:
    """This node's side of ``node_watermarks`` (blocking calls: worker threads)."""

    def __init__(self, engine: Engine, node_id: str, *, enabled: bool = True) -> None:
        self.engine = engine
        self.node_id = node_id
        self.enabled = enabled
        #: the least of the other nodes' watermarks at the last :meth:`publish`; None: none
        self.others: int | None = None
        self.others_count = 0

    def publish(self, own_ms: int) -> None:
        """Write this node's watermark and read the others'."""
        if not self.enabled:
            return
        now = int(time.time() * 1000)
        with self.engine.begin() as conn:
            done = conn.execute(
                update(_t)
                .where(_t.c.node_id == self.node_id)
                .values(loaded_through_ms=own_ms, updated_at=now)
            )
            if done.rowcount == 0:
                conn.execute(
                    _t.insert().values(
                        node_id=self.node_id, loaded_through_ms=own_ms, updated_at=now
                    )
                )
            others = [
                int(v)
                for v in conn.scalars(
                    select(_t.c.loaded_through_ms).where(_t.c.node_id != self.node_id)
                )
            ]
        self.others = min(others, default=None)
        self.others_count = len(others)

    def withdraw(self) -> None:
        """Delete this node's row (it stops with nothing left in its spool)."""
        if not self.enabled:
            return
        with self.engine.begin() as conn:
            conn.execute(delete(_t).where(_t.c.node_id == self.node_id))

    def through(self, own_ms: int) -> int:
        """The least of ``own_ms`` and the other nodes' watermarks as last read."""
        return own_ms if self.others is None else min(own_ms, self.others)

    def rows(self) -> list[NodeRow]:
        """Every node's row, by node id (blocking)."""
        with self.engine.connect() as conn:
            return [
                NodeRow(str(r.node_id), int(r.loaded_through_ms), int(r.updated_at))
                for r in conn.execute(select(_t).order_by(_t.c.node_id))
            ]

    def forget(self, node_id: str, *, silent_ms: int, force: bool = False) -> NodeRow:
        """Delete another node's row (a node removed without stopping cleanly), so that the
        jobs no longer wait for its spool; the row deleted. Refused (:class:`Conflict`) for
        this node's own row, and, unless ``force``, for a row written within the last
        ``silent_ms``: its node is alive, and would write it again at its next tick.
        :class:`NotFound` when no node has that id (blocking)."""
        if node_id == self.node_id:
            raise Conflict(
                f"{node_id} is the node answering: a node deletes its own row when it stops "
                "with its spool loaded",
                field="node",
            )
        now = int(time.time() * 1000)
        with self.engine.begin() as conn:
            found = conn.execute(select(_t).where(_t.c.node_id == node_id)).first()
            if found is None:
                raise NotFound(f"no node {node_id} has a watermark row", field="node")
            row = NodeRow(node_id, int(found.loaded_through_ms), int(found.updated_at))
            age_ms = now - row.updated_ms
            if not force and age_ms < silent_ms:
                raise Conflict(
                    f"{node_id} wrote its watermark {max(age_ms, 0) / 1000:.1f} s ago: it is "
                    "alive (stop it; or force, and it writes its row again at its next tick)",
                    field="node",
                )
            stmt = delete(_t).where(_t.c.node_id == node_id)
            if not force:  # not if it wrote meanwhile: alive after all
                stmt = stmt.where(_t.c.updated_at == row.updated_ms)
            if conn.execute(stmt).rowcount == 0 and not force:
                raise Conflict(f"{node_id} wrote its watermark just now: it is alive", field="node")
        log.warning("forgot the watermark of node %s (written %d ms ago)", node_id, age_ms)
        return row
