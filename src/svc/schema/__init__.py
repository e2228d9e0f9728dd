"""The event schema, written once: what svc stores of an event, what a client may send, and
the dimensions a report reads. Everything else derives from it (the ingestion pipeline's rows,
the OpenAPI document's types, the wire-format description the edge and the TypeScript client
read: ``python -m svc.schema``).

It imports nothing else of svc. Its modules:

- :mod:`svc.schema.limits`: the wire format's limits (standard library only: ``svcm`` loads it
  at every start);
- :mod:`svc.schema.wire`: the event as a client sends it (:class:`~svc.schema.wire.RawEvent`,
  its types and limits) and the wire-format description generated from it;
- :mod:`svc.schema.row`: the event as it is stored (:class:`~svc.schema.row.EventRow`);
- :mod:`svc.schema.dimensions`: the dimensions of the reports (standard library only).
"""
