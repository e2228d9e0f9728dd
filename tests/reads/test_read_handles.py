"""The store's read handles (svc.storage.read_handles): each lent to one read at a time,
opened when first needed, spares never waited for."""

from __future__ import annotations

from typing import Any, cast

import pytest

from svc.storage.read_handles import NoReadHandle, ReadHandles


class Opened:
    """Stand-ins for store handles: the pool only lends and keeps them."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> Any:
        self.count += 1
        return cast(Any, object())


def test_handles_are_lent_once_opened_when_needed_and_given_back() -> None:
    opened = Opened()
    pool = ReadHandles(2, opened)
    a, b = pool.lend(), pool.lend()
    assert a is not b and opened.count == 2 and pool.lent == 2
    with pytest.raises(NoReadHandle):
        pool.lend()  # the scheduler admits no more reads than handles
    pool.give_back(a)
    assert pool.lend() is a and opened.count == 2  # reused, not opened again


def test_spares_are_apart_and_never_waited_for() -> None:
    opened = Opened()
    pool = ReadHandles(1, opened)
    read = pool.lend()
    spare = pool.try_spare()
    assert spare is not None and spare is not read
    assert pool.try_spare() is None  # none free: the caller runs on its own handle
    pool.give_back_spare(spare)
    assert pool.try_spare() is spare and pool.lent == 2
    assert len(pool.handles()) == 2 == opened.count


def test_a_handle_that_fails_to_open_is_not_counted() -> None:
    def broken() -> Any:
        raise OSError("the engine is gone")

    pool = ReadHandles(1, broken)
    with pytest.raises(OSError):
        pool.lend()
    assert pool.lent == 0 and pool.handles() == []


def test_a_discarded_handle_is_closed_and_replaced() -> None:
    closed: list[Any] = []

    class Handle:
        def close(self) -> None:
            closed.append(self)

    pool = ReadHandles(1, lambda: cast(Any, Handle()))
    first = pool.lend()
    pool.discard(first)  # its read was stopped: what it left unread stays out of the pool
    assert closed == [first] and pool.lent == 0 and pool.handles() == []
    second = pool.lend()
    assert second is not first
    shared = ReadHandles(1, lambda: cast(Any, Handle()), own_handles=False)
    handle = shared.lend()
    shared.discard(handle)
    assert handle not in closed  # a server's shared client is never closed here
