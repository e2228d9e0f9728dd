"""The section of a path: its first segment (``/blog/post-1`` and ``/blog`` are in ``/blog``,
``/`` is in ``/``). The daily rollups hold the session figures of each of a day's busiest
sections (svc.storage.rollups, ``section`` rows); a filter on the page whose matching paths
on every rolled day are those of one section, all of them, reads its sessions there instead
of testing every session's pages (svc.queries.run). A section is only a grouping of paths:
which paths a filter matches is always decided from the paths themselves."""

from __future__ import annotations


def section_sql(path: str) -> str:
    """The section of the path ``path`` (an SQL expression), in SQL."""
    return (
        f"if(position({path}, '/', 2) > 0, substring({path}, 1, position({path}, '/', 2) - 1), "
        f"{path})"
    )


def section_dimension(dimension: str, section: str) -> str:
    """The ``dimension`` of the rollups' rows of a session ``dimension`` ('' the totals) over
    the sessions with an event in ``section``."""
    return f"{dimension}@{section}"
