"""Importing events from exports: svc's own (NDJSON, CSV), Umami's and Plausible's.

- Readers (:mod:`~svc.imports.sources`, :mod:`~svc.imports.svc_export`,
  :mod:`~svc.imports.umami`, :mod:`~svc.imports.plausible`) turn a source into rows
  (:mod:`~svc.imports.rows`); standard library only, so ``svcm`` starts fast.
- :mod:`~svc.imports.run` checks each row as POST /analytics checks an event (the wire
  format's ``validate_event``: the same ``RawEvent``), skips what is stored, and hands
  batches to a sink.
- Over HTTP the events go to POST /analytics (:mod:`~svc.imports.over_http` makes them) and
  the service's own pipeline ingests them. On a data directory :mod:`~svc.imports.store`
  writes them through :mod:`~svc.imports.historical`: the ingestion pipeline's steps that fit
  historical data.

Nothing here knows the command line: ``svcm import`` (:mod:`svc.cli.transfer`) parses the
arguments, shows progress and prints the summary.
"""
