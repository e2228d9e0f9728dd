"""The runner: the one part of the read side that calls the store. It reads the facts a plan
needs (:meth:`Runner.facts`) and runs the statements built from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from svc.queries import plan as planner
from svc.queries.plan import Facts, Needs, Plan
from svc.queries.sql import sessions as sql
from svc.queries.sql import snapshots as snapshot_sql
from svc.queries.sql.statement import Statement
from svc.schema.page_by import PAGE_BY_DIMENSIONS
from svc.storage.events import EventStore
from svc.storage.memo import statement_key


class Runner:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    def rows(self, stmt: Statement) -> Sequence[Sequence[Any]]:
        return self.store.query(stmt.sql, stmt.params)

    def named(self, stmt: Statement) -> list[dict[str, Any]]:
        return self.store.query_named(stmt.sql, stmt.params)

    def together(self, *stmts: Statement) -> list[list[dict[str, Any]]]:
        """Run ``stmts`` side by side (as the store can); their rows in order."""
        return self.store.query_named_together(*((s.sql, s.params) for s in stmts))

    def remembered(self, *stmts: Statement) -> list[Sequence[Sequence[Any]]]:
        """The rows of ``stmts`` as :meth:`rows_together` reads them, those read since the
        store's last write taken from its memo (svc.storage.memo) and the others kept there.
        For the facts' statements only: their rows are a function of the stored rows alone
        (no ``now()``), and few. The rows are shared: never change them."""
        return self._remembered(stmts, named=False)

    def remembered_named(self, *stmts: Statement) -> list[Sequence[dict[str, Any]]]:
        """The rows of ``stmts`` as :meth:`together` reads them, as :meth:`remembered` keeps
        them."""
        return self._remembered(stmts, named=True)

    def remembered_rows(self, stmt: Statement) -> Sequence[Sequence[Any]]:
        """The rows of ``stmt``, as :meth:`remembered` keeps them."""
        return self.remembered(stmt)[0]

    def _remembered(self, stmts: Sequence[Statement], named: bool) -> list[Any]:
        memo = self.store.memo
        if not memo.entries:  # (a ClickHouse server, or turned off: no keys to make)
            return list(self._read(stmts, named))
        generation = self.store.read_generation()  # before any read begins
        if generation is None:  # the nodes' count of writes cannot be read: keep nothing
            return list(self._read(stmts, named))
        keys = [(named, statement_key(s.sql, s.params)) for s in stmts]
        found: list[Sequence[Any] | None] = [memo.get(k, generation) for k in keys]
        todo = [stmts[i] for i, rows in enumerate(found) if rows is None]
        if todo:
            read: Sequence[Sequence[Any]] = self._read(todo, named)
            missing = (i for i, rows in enumerate(found) if rows is None)
            for i, got in zip(missing, read, strict=True):
                found[i] = memo.put(keys[i], generation, got)
        return found

    def _read(self, stmts: Sequence[Statement], named: bool) -> Sequence[Sequence[Any]]:
        if named:
            return self.together(*stmts)
        return self.rows_together(*stmts)

    def facts(self, plan: Plan, needs: Needs) -> Facts:
        """Read what ``needs`` asks for under ``plan`` (:func:`svc.queries.plan.reads`), in
        two rounds of statements side by side: what the plan alone names (the sessions that
        cross the ends, the rolled-up days, the snapshots of every day they may serve), then
        what those tell (the events outside the range of the crossing sessions, the sessions
        changed since the snapshots wanted). Over 30 days of 100M events ending today: the
        rolled-up days and the snapshots (13 ms) and the changed sessions (10 ms) no longer
        wait in rounds of their own."""
        todo = planner.reads(plan, needs)
        first: dict[str, Statement] = {}
        if todo.crossing:
            first["crossing"] = sql.crossing_statement(plan, Facts())
        elif todo.long:
            first["long"] = sql.long_statement(plan, Facts())
        span = plan.rollup_span_to_end if todo.last_day else plan.rollup_span
        if todo.rolled == "rollups" and span is not None:
            first["rolled"] = sql.current_rolled_days(plan, span, todo.property_key)
            if todo.last_day:
                every = [span[0] + timedelta(days=i) for i in range((span[1] - span[0]).days + 1)]
                first["snapshots"] = snapshot_sql.current(plan, every)
        rows = dict(zip(first, self.remembered(*first.values()), strict=True))
        facts = Facts()
        if "crossing" in rows:
            near = [r for r in rows["crossing"] if int(r[4])]
            long = planner.long_sessions([r for r in rows["crossing"] if not int(r[4])])
            facts = Facts(long=long, crossing=planner.crossing(plan, long, near))
        elif "long" in rows:
            facts = Facts(long=planner.long_sessions(rows["long"]))
        if todo.rolled == "rollups":
            days = self._rolled_days(plan, facts, rows.get("rolled", ()), todo.last_day)
            facts = replace(facts, rolled=days)
            if todo.last_day:  # the days not rolled up yet: their snapshots
                wanted = set(planner.snapshot_wanted(plan, facts))
                current = planner.day_versions(rows.get("snapshots", ()))
                facts = replace(facts, snapshots=tuple(d for d in current if d[0] in wanted))
        crossing = facts.crossing is not None and bool(facts.crossing.every_id)
        second: dict[str, Statement] = {}
        if needs.edges and todo.outside and crossing:
            second["outside"] = sql.outside_statement(plan, facts)
        if todo.page_outside and crossing:
            second["page_outside"] = sql.page_outside_statement(plan, facts)
        if facts.snapshots:
            second["changed"] = snapshot_sql.changed(plan, facts)
        rows = dict(zip(second, self.remembered(*second.values()), strict=True))
        if needs.edges:  # (none outside when the plan counts the events in the range)
            outside = tuple((int(r[0]), int(r[1]), int(r[2])) for r in rows.get("outside", ()))
            facts = replace(facts, outside=outside)
        if todo.page_outside:
            page_outside = tuple((int(r[0]), int(r[1])) for r in rows.get("page_outside", ()))
            facts = replace(facts, page_outside=page_outside)
        if "changed" in rows:
            facts = replace(facts, changed=tuple(int(r[0]) for r in rows["changed"]))
        if todo.rolled == "rolled_sessions":
            facts = self._rolled_sessions(plan, facts, pages=needs.page_edges)
        return facts

    def rows_together(self, *stmts: Statement) -> list[list[tuple[Any, ...]]]:
        """The rows of ``stmts``, run side by side (:meth:`together`), in order, each a
        tuple (as :meth:`remembered` keeps them)."""
        if len(stmts) <= 1:
            return [[tuple(r) for r in self.rows(s)] for s in stmts]
        return [[tuple(r.values()) for r in rows] for rows in self.together(*stmts)]

    def _rolled_days(
        self, plan: Plan, facts: Facts, rows: Sequence[Sequence[Any]], last_day: bool = False
    ) -> tuple[tuple[Any, int], ...]:
        """The rolled-up days the rollups serve, from ``rows`` of
        :func:`svc.queries.sql.sessions.current_rolled_days` over the span."""
        span = plan.rollup_span_to_end if last_day else plan.rollup_span
        if span is None:
            return ()
        days = planner.rolled_days(plan, rows, facts.long_days)
        end_day, versions = span[1], dict(days)
        inner = plan.rollup_span
        # the last day's sessions are corrected with their events after the end as they are
        # now (Facts.after_end): not with a rollup that events received since changed
        extra = last_day and end_day in versions and (inner is None or end_day > inner[1])
        if (
            extra
            and self.remembered_rows(sql.received_since(plan, end_day, versions[end_day]))[0][0]
        ):
            days = tuple(d for d in days if d[0] != end_day)
        return days

    def _rolled_sessions(self, plan: Plan, facts: Facts, pages: bool = False) -> Facts:
        """The rolled-up days whose sessions ``rolled_sessions`` serves; with a filter on the
        page, the hashes of the matching paths of those days first (none are taken if one of
        them is also a path's that does not match), and with filters on the page alone the
        section whose ``section`` rows serve them (:func:`svc.queries.plan.one_section`),
        read beside them; for the pages (``pages``) under one value of a dimension of
        svc.schema.page_by, whether that value's page rows serve them
        (:func:`svc.queries.plan.page_by`)."""
        span = plan.rollup_span
        rows = self.remembered_rows(sql.current_rolled_days(plan, span, None)) if span else []
        days = self._rolled_days(plan, facts, rows)
        hashes: tuple[int, ...] | None = None
        section: str | None = None
        value = plan.rolled_value
        if days and pages and value is not None and value[0] in PAGE_BY_DIMENSIONS:
            marked = self.remembered_rows(sql.page_by_days(plan, days, *value))
            return replace(facts, rolled=days, page_by=planner.page_by(plan, marked, len(days)))
        if days and plan.event_conditions:
            reads = [sql.path_hashes(plan, days)]
            if not plan.session_conditions:  # the filters are on the page alone
                reads += [sql.path_sections(plan, days), sql.section_days(plan, days)]
            path_hashes, *sections = self.remembered(*reads)
            section = planner.one_section(*sections) if sections else None
            hashes = planner.matching_hashes(path_hashes)
            if hashes is None and section is None:  # a collision: every day from the sessions
                return facts
        return replace(facts, rolled=days, matching_hashes=hashes, section=section)
