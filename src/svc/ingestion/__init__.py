"""Ingestion: validate, enrich and identify events, then append them to the spool."""
