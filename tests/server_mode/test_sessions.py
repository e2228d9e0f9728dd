"""Derived and client sessions with svc in server mode on the ClickHouse double: the sessions
crossing midnight and the ends of a range (tests/test_sessions_table.py), and client session
ids over gaps, days and a restart (tests/test_client_session_ids.py)."""

from tests.test_client_session_ids import (  # noqa: F401
    both,
    test_a_client_session_id_names_one_session_over_gaps_and_days,
)
from tests.test_sessions_table import (  # noqa: F401
    edges,
    test_a_session_loaded_in_two_parts_crosses_midnight_once,
    test_a_session_over_two_days_counts_once,
    test_entry_and_exit_pages_are_the_whole_sessions,
    test_session_filter_keeps_whole_sessions,
    test_sessions_crossing_the_end_of_the_range,
    test_sessions_crossing_the_start_of_the_range,
    test_the_events_path_agrees_where_the_semantics_meet,
)
