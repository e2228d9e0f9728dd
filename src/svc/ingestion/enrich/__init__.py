"""Pure, cached enrichment functions of the ingestion pipeline (source, user agent, bots, geo)."""
