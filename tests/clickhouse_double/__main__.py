"""``python -m tests.clickhouse_double --data-dir D --port P``: serve the double until
SIGTERM or SIGINT (see tests/clickhouse_double/__init__.py)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.clickhouse_double.engine import OLDEST_SERVER, Engine
from tests.clickhouse_double.http import DoubleServer
from tests.clickhouse_double.parser import oldest_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.clickhouse_double")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", default="default")
    parser.add_argument("--password", default="")
    parser.add_argument("--database", action="append", default=[], help="created at start")
    parser.add_argument("--compatibility", default=OLDEST_SERVER)
    parser.add_argument(
        "--parser-dir",
        type=Path,
        default=None,
        help="chdb-core of the oldest server version (default: .stamps/clickhouse-26.3)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    engine = Engine(args.data_dir, args.compatibility, oldest_parser(args.parser_dir))
    for name in args.database:
        engine.create_database(name)
    server = DoubleServer((args.host, args.port), engine, args.user, args.password)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"the ClickHouse double on http://{args.host}:{server.server_port}, "
        f"engine {engine.version}, parser {engine.parser_version}",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
