"""The ``svcm`` entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from svc import __version__
from svc.settings import Settings


def build_parser() -> argparse.ArgumentParser:
    from svc.cli import serve

    parser = argparse.ArgumentParser(
        prog="svcm", description="svc: cookie-free web analytics. Operator tool."
    )
    parser.add_argument("--version", action="version", version=f"svcm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_serve = sub.add_parser(
        "serve",
        help="run the service",
        description="Run the service. Example: svcm serve --port 8080 --data-dir ./data",
    )
    serve.add_arguments(p_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        from svc.cli import serve

        overrides = {k: v for k, v in vars(args).items() if k != "command" and v is not None}
        try:
            settings = Settings.from_env(**overrides)
        except ValueError as exc:
            print(f"svcm: {exc}", file=sys.stderr)
            return 2
        return serve.run(settings)
    parser.print_help()
    return 0
