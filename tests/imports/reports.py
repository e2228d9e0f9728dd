"""Every count per dimension of projects of a data directory, read through the service's own
application in process (svcm's direct mode), as JSON on stdout: the oracle of the import
round trips (tests/imports/support.py runs it in a process of its own: chDB opens one data
directory per process).

    python -m tests.imports.reports DATA_DIR FROM TO TZ PROJECT [PROJECT...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from svc.cli.connection import DirectApi

#: The breakdowns compared, every one a dimension an import may carry.
DIMENSIONS = (
    "page",
    "entry_page",
    "exit_page",
    "hostname",
    "source",
    "channel",
    "referrer",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "country",
    "region",
    "city",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
    "event",
)
#: The columns of a breakdown row compared.
COLUMNS = ("visitors", "sessions", "pageviews", "events", "bounceRate", "avgSessionDuration")


def reports(api: DirectApi, project: str, first: str, last: str, tz: str) -> dict[str, Any]:
    """``/metrics`` of the range and, per dimension, each value's counts."""
    span = {"projectId": project, "from": first, "to": last, "tz": tz}
    out: dict[str, Any] = {}
    metrics = api.request("GET", "/metrics", params=span)
    out["metrics"] = {
        k: metrics[k]
        for k in ("visitors", "sessions", "pageviews", "events", "bounceRate", "trafficSources")
    }
    out["metrics"]["avgSessionDuration"] = metrics.get("avgSessionDuration")
    for by in DIMENSIONS:
        answer = api.request(
            "GET", "/metrics/breakdown", params={**span, "by": by, "limit": "1000"}
        )
        out[by] = {
            str(row["value"]): {c: row[c] for c in COLUMNS if c in row} for row in answer["rows"]
        }
    revenue = api.request("GET", "/metrics/revenue", params=span)
    revenue.pop("projectId", None)
    out["revenue"] = revenue
    return out


def main(argv: list[str]) -> None:
    data_dir, first, last, tz, *projects = argv
    api = DirectApi(Path(data_dir))
    try:
        doc = {p: reports(api, p, first, last, tz) for p in projects}
    finally:
        api.close()
    json.dump(doc, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
