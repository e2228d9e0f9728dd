"""Funnels, exports, the lake and stopped reads with svc in server mode on the ClickHouse
double: what svc does only with a server (an export and a lake day streamed from the store,
a read stopped by KILL QUERY over HTTP, ``max_execution_time`` answered as a server answers
it)."""

from tests.lake.test_lake import test_a_lake_in_a_local_directory  # noqa: F401
from tests.test_export import test_an_export_in_pieces_is_the_export_in_one  # noqa: F401
from tests.test_funnel_alternatives import (  # noqa: F401
    test_alternatives_count_once_and_the_rolled_days_agree,
)
from tests.test_read_bounds import (  # noqa: F401
    test_a_read_whose_client_leaves_is_stopped,
    test_a_slow_read_is_answered_504_at_its_time_and_stopped,
)
