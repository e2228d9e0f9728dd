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
version. A node removed for good without stopping is deleted by hand (docs/operations.md).
A node's own figure is fresh; the others' are read at each tick, so a little older, which is
safe (a watermark only grows).
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import Engine, delete, select, update

from svc.meta import tables

log = logging.getLogger(__name__)
_t = tables.node_watermarks


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

    def rows(self) -> list[tuple[str, int, int]]:
        """(node id, watermark ms, updated ms) of every node (blocking)."""
        with self.engine.connect() as conn:
            return [
                (str(r.node_id), int(r.loaded_through_ms), int(r.updated_at))
                for r in conn.execute(select(_t).order_by(_t.c.node_id))
            ]
