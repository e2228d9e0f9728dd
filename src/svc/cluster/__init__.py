"""Several svc nodes on one ClickHouse server, PostgreSQL and Redis.

* :mod:`svc.cluster.leases`: the background jobs' leases in the metadata store (one node runs
  each job at a time; a lease its holder stopped renewing is taken over once it expires).
* :mod:`svc.cluster.shared`: the state ingestion shares through Redis (derived and
  client-named sessions, recent event ids, signed edge requests already served) and the
  store's write generation that keeps every node's read memo true.
"""
