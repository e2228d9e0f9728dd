"""The saved resources' store functions on SQLite and PostgreSQL (the ``meta`` fixture runs
each test on both): what is written reads back the same, the bound per project, personal
segments, annotations by local day, and a project's deletion taking its saved things along."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from svc.errors import Conflict, InvalidRequest, NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.saved import annotations as notes
from svc.saved import funnels, goals, segments
from svc.saved.common import MAX_PER_PROJECT
from tests.test_meta_store import meta

__all__ = ["meta"]


def test_saved_things_round_trip_and_go_with_their_project(meta: MetaStore) -> None:
    project, _ = meta.create_project("saved", "Asia/Tokyo", [])
    pid = project.id
    goal = goals.create(meta, pid, {"name": "Pro", "kind": "event", "event": "signup",
                                    "property": {"key": "plan", "value": "pro|team"}})  # fmt: skip
    assert goals.list_goals(meta, pid) == [goal]
    assert goal.property_filter() is not None and goal.goal == "event:signup"
    changed = goals.change(meta, pid, goal.id, {"name": "Pro plan"})
    assert changed.name == "Pro plan" and changed.prop_value == "pro|team"
    funnel = funnels.create(meta, pid, {"name": "F", "steps": ["page:/", "page:/a|page:/b"]})
    assert funnels.find(meta, pid, funnel.id) == funnel and funnel.window is None
    assert funnels.chosen(meta, pid, funnel.id, []) == funnel
    with pytest.raises(InvalidRequest):
        funnels.chosen(meta, pid, funnel.id, ["page:/"])
    with pytest.raises(NotFound):
        funnels.chosen(meta, pid, "funnel_nope", [])
    mine = segments.create(meta, pid, {"name": "M", "filters": ["device:is:mobile"]}, "acc_a")
    shared = segments.create(meta, pid, {"name": "S", "filters": ["page:is:/"]}, None)
    assert (mine.shared, shared.shared) == (False, True)
    assert segments.list_visible(meta, pid, "acc_a") == [mine, shared]
    assert segments.list_visible(meta, pid, "acc_b") == [shared]
    assert segments.list_visible(meta, pid, None) == [shared]
    with pytest.raises(NotFound):
        segments.change(meta, pid, mine.id, {"name": "x"}, "acc_b")
    note = notes.create(meta, pid, {"date": "2026-03-01T16:00:00Z", "text": "n"}, "admin")
    assert note.local_day("Asia/Tokyo") == "2026-03-02"
    assert notes.list_annotations(meta, pid, "Asia/Tokyo", "2026-03-02", "2026-03-02") == [note]
    assert notes.list_annotations(meta, pid, "UTC", "2026-03-02") == []

    meta.delete_project(pid)
    with meta.engine.connect() as conn:
        for table in tables.SAVED_TABLES:
            assert conn.scalar(select(func.count()).select_from(table)) == 0, table.name


def test_at_most_the_bound_per_project(meta: MetaStore) -> None:
    a, _ = meta.create_project("bound-a", "UTC", [])
    b, _ = meta.create_project("bound-b", "UTC", [])
    for i in range(MAX_PER_PROJECT):
        goals.create(meta, a.id, {"name": f"g{i}", "kind": "page", "page": f"/{i}"})
    with pytest.raises(Conflict):
        goals.create(meta, a.id, {"name": "one more", "kind": "page", "page": "/x"})
    goals.create(meta, b.id, {"name": "another project's", "kind": "page", "page": "/x"})
    with pytest.raises(NotFound):
        goals.create(meta, "svc_proj_nope", {"name": "x", "kind": "page", "page": "/x"})
