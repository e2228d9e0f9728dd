"""Importing events from exports: svc's own (NDJSON, CSV, Parquet), Umami's, Plausible's and
GA4's (its BigQuery export).

- Readers (:mod:`~svc.imports.sources`, :mod:`~svc.imports.svc_export`,
  :mod:`~svc.imports.umami`, :mod:`~svc.imports.plausible` with
  :mod:`~svc.imports.plausible_sessions`, :mod:`~svc.imports.ga4`) turn a source into rows
  (:mod:`~svc.imports.rows`); standard library only (pyarrow is loaded for a Parquet file
  alone), so ``svcm`` starts fast.
- :mod:`~svc.imports.run` checks each row as POST /analytics checks an event (the wire
  format's ``validate_event``: the same ``RawEvent``), skips what is stored, and hands
  batches to a sink.
- Over HTTP the events go to POST /analytics (:mod:`~svc.imports.over_http` makes them, with
  what the source recorded of each client) and the service's own pipeline ingests them. On a
  data directory :mod:`~svc.imports.store` writes them through
  :mod:`~svc.imports.historical`: the ingestion pipeline's steps that fit historical data.

Nothing here knows the command line: ``svcm import`` (:mod:`svc.cli.transfer`) parses the
arguments, shows progress and prints the summary.
"""
