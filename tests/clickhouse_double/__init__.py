"""A test double of a ClickHouse server: the part of ClickHouse's HTTP interface that
clickhouse-connect uses, in front of one real ClickHouse engine (chDB) in a process of its
own. It exists because no current ClickHouse server can be installed on the machines the
tests run on; it is a double, not a server, and never part of the product (src/svc does not
import it: tests/test_import_rules.py). What it does not prove about a real server is listed
in docs/operations.md ("The ClickHouse double").

Use in a test module (one double per module: it takes a second or so to start)::

    from tests.clickhouse_double import RunningDouble, clickhouse_double  # noqa: F401

    def test_something(clickhouse_double: RunningDouble, tmp_path: Path) -> None:
        srv = Server(tmp_path / "data", env={"SVC_CLICKHOUSE_URL": clickhouse_double.url})
        ...

The fixture ``clickhouse_double`` (module scope) starts it on a free loopback port with a
data directory under the module's temporary directory, and stops it after the module.
``.url`` is what ``SVC_CLICKHOUSE_URL`` takes (``http://svc:<password>@127.0.0.1:<port>/svc``:
user ``svc``, database ``svc``), ``.base_url`` the same without credentials or database,
``.database_url(key)`` the same URL with a database of its own for ``key`` (made on the
double if missing: several clusters of nodes on one double), ``.statements()`` every
statement received so far (``{"sql", "parses", "parser", "ms"}``: whether ClickHouse's parser
of the oldest server version the docs name took it,
:data:`tests.clickhouse_double.engine.OLDEST_SERVER`; a statement that does not parse is
refused with code 62). Several svc nodes may share one double, and one database on it, as
they would share a server.

To run existing tests in server mode, a module imports them and the fixtures they use; the
fixture ``server_mode`` makes every ``tests.support.Server`` started meanwhile use a database
of its own on the module's double (tests/server_mode/conftest.py also overrides ``server``,
the suite's one server).

By hand: ``python -m tests.clickhouse_double --data-dir /tmp/ch --port 8123 --user svc
--password secret --database svc``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import support
from tests.clickhouse_double.process import RunningDouble

__all__ = ["RunningDouble", "clickhouse_double", "server_mode"]


@pytest.fixture(scope="module")
def clickhouse_double(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDouble]:
    """A double of a ClickHouse server for this test module (see the module's docstring)."""
    double = RunningDouble(tmp_path_factory.mktemp("clickhouse-double")).start()
    try:
        yield double
    finally:
        double.stop()


@pytest.fixture(scope="module")
def server_mode(clickhouse_double: RunningDouble) -> Iterator[RunningDouble]:
    """While this test module runs, every ``tests.support.Server`` started without
    ``SVC_CLICKHOUSE_URL`` in its ``env`` runs in server mode, on a database of its own (by
    its data directory) on this module's double."""
    support.SERVER_MODE.append(lambda data_dir: clickhouse_double.database_url(str(data_dir)))
    try:
        yield clickhouse_double
    finally:
        support.SERVER_MODE.pop()
