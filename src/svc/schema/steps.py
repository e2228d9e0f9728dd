"""The key of an event as a funnel step (``visitor_steps``, storage migration 17): a page view
is its path's, another event its name's, each a 32-bit hash (xxHash32), the name's taken with
a NUL byte before it so that no name and path share one by construction. A funnel step
``page:<path>`` matches the page views whose key is that path's, ``event:<name>`` the events
whose key is that name's (``event:page_view``, every page view, has no key of its own).
Where a key is also another path's or name's on the days read, the funnel reads the events
instead (svc.queries.conversions)."""

from __future__ import annotations

#: The key of a path, and of an event name, over an SQL expression of it.
_PATH_KEY = "xxHash32({})"
_NAME_KEY = "xxHash32(concat(char(0), {}))"


def step_key(is_page: str, path: str, name: str) -> str:
    """The key, in SQL, of a row that is a page view where ``is_page`` holds (its path
    ``path``), else an event named ``name`` (each an SQL expression)."""
    return f"if({is_page}, {_PATH_KEY.format(path)}, {_NAME_KEY.format(name)})"


#: The key of an event (a row of ``events``), in SQL.
STEP_KEY_SQL = step_key("name = 'page_view'", "path", "name")


def step_key_sql(kind: str, param: str) -> str:
    """The key of a step of ``kind`` (``page`` or ``event``) whose target is bound as
    ``param``, in SQL."""
    return (_PATH_KEY if kind == "page" else _NAME_KEY).format(f"{{{param}:String}}")
