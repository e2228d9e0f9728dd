"""tests/test_metrics_golden.py with svc in server mode on the ClickHouse double, and the
deletion of a project (a lightweight DELETE in every table)."""

from tests.test_metrics_golden import (  # noqa: F401
    golden,
    test_bad_parameters_are_400,
    test_days_are_inclusive,
    test_golden_metrics,
    test_projects_are_isolated,
    test_range_without_events_is_zero,
    test_time_zone_moves_events_across_midnight,
    test_to_defaults_to_today,
)
from tests.test_projects_api import test_delete_project_removes_keys_and_events  # noqa: F401
