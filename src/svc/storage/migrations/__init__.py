"""The event store's migrations: ``NNN_name.sql``, the statements of migration NNN, applied in
order by svc.storage.migrate; and, beside a migration with a side effect, ``vNNN_name.py``
(the same name, a ``v`` before it) whose :data:`AFTER` says what it does once the statements
have run: a derived table written anew from the stored events, a table sorted anew.

A side effect runs once the statements of every pending migration have run (every table
exists then), before their versions are recorded: a crash in between runs the migrations
(each statement may run again) and the side effects again. The side effects of the pending
migrations run in the order of their versions, each :attr:`After.name` once, and not at all
when another pending migration's side effect :attr:`After.covers` it. A new store made from
``schema.sql`` (svc.storage.schema) runs none: its tables are empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


@dataclass(frozen=True)
class After:
    """A migration's side effect: ``run`` with the store's rebuilds (whose ``handles`` and
    ``writes`` it may use; a write it makes itself it counts with ``writes.note_write``)."""

    #: what it does, the same for two migrations whose side effect is the same
    name: str
    run: Callable[[Rebuilds], None]
    #: the names of other side effects this one does as well
    covers: tuple[str, ...] = ()
