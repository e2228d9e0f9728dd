"""Deleting a project's rows from every table of the store that holds them
(svc.storage.tables.PROJECT_TABLES)."""

from __future__ import annotations

from svc.storage.tables import PROJECT_TABLES
from svc.storage.writes import Writer, counted_write


class Deletion(Writer):
    """A project's rows gone, each table at a time; counts as a write."""

    @counted_write
    def delete_project(self, project_id: str) -> None:
        """Delete every event and session of a project (lightweight DELETEs: gone from queries at
        once)."""
        for table in PROJECT_TABLES:
            self.handles.client.command(
                f"DELETE FROM {table} WHERE project_id = {{project:String}}",
                parameters={"project": project_id},
            )
