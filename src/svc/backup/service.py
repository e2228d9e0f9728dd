"""One entry point for a backup of the running service, wherever it goes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from svc.backup import remote, take
from svc.lake.places import is_s3
from svc.runtime import Runtime


async def backup(
    runtime: Runtime, to: str | Path, *, keep: int | None = None, full: bool = False
) -> Any:
    """A backup into ``to``: a directory on this machine (:func:`svc.backup.take.take`) or
    ``s3://bucket/prefix`` (:func:`svc.backup.remote.take_to_s3`); its manifest."""
    if isinstance(to, str) and is_s3(to):
        return await remote.take_to_s3(runtime, to, keep=keep, full=full)
    return await take.take(runtime, Path(to), keep=keep, full=full)
