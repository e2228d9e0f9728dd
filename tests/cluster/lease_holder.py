"""A node that holds one job's lease and renews it until killed (``kill -9`` by the test).

``python -m tests.cluster.lease_holder <metadata url> <job> <ttl s>``: prints ``held <holder>``
once it holds the lease, then renews it as a running job does (Leases.run_held)."""

from __future__ import annotations

import asyncio
import sys

from svc.cluster.leases import Leases
from svc.meta.store import MetaStore


async def main(url: str, job: str, ttl: float) -> None:
    meta = MetaStore(url)
    leases = Leases(meta.engine, "doomed", ttl)
    while not await leases.held(job):
        await asyncio.sleep(0.05)
    print("held", leases.holder, flush=True)
    await leases.run_held(job, lambda: asyncio.sleep(3600))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
