"""Expire days from the lake: each project's days before its raw-data horizon (the retention
job's, svc.retention.job), so that the lake keeps a project's raw events no longer than the
store does.

A day is its directory ``project=<id>/day=<YYYY-MM-DD>/`` (svc.lake.writer): its manifest is
deleted first, then the rest of the directory (the Parquet file), so a reader that goes by
the manifests never finds one whose file is gone; a day left half-deleted by a failure (no
manifest, a file) is deleted at the next run. Only the days of the projects given are looked
at (one listing of the lake's top level, and one of each such project's days): a project
the lake holds and the store does not know (deleted) is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from svc.lake import writer
from svc.lake.places import Place

PROJECT = "project="
DAY = "day="


def day_of(name: str) -> date | None:
    """The day of a directory name ``day=YYYY-MM-DD``; None for any other name."""
    if not name.startswith(DAY):
        return None
    try:
        return date.fromisoformat(name[len(DAY) :])
    except ValueError:
        return None


def expire_days(place: Place, horizons: Mapping[str, date]) -> list[tuple[str, date]]:
    """Delete from ``place`` each project's days before its horizon (``horizons``: project id
    -> the first day whose raw events it keeps), manifest first; the (project, day) pairs
    deleted, in order."""
    if not horizons:
        return []
    tops = set(place.children(""))
    gone: list[tuple[str, date]] = []
    for project_id, before in sorted(horizons.items()):
        top = f"{PROJECT}{project_id}"
        if top not in tops:
            continue
        for name in place.children(f"{top}/"):
            day = day_of(name)
            if day is None or day >= before:
                continue
            prefix = writer.day_prefix(project_id, day)
            place.delete_prefix(prefix + writer.MANIFEST)
            place.delete_prefix(prefix)
            gone.append((project_id, day))
    return gone
