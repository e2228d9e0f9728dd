"""The ``svcm`` entry point: the parser of every command, and how a run ends.

A run ends with the command's exit status; an expected failure (:class:`CliError`) prints one
line on stderr; anything unexpected prints one line too, and the traceback with ``--debug``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn, cast

from svc import __version__
from svc.cli.errors import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, CliError
from svc.settings import Settings

DESCRIPTION = """\
svc: cookie-free web analytics. The operator's tool.

Talks to a running service over HTTP (--url, SVC_URL, or `svcm login`) with an admin token
or a project's secret key (--token, SVC_TOKEN), or works directly on a data directory
(--data-dir) while no service runs on it. The commands are the same either way."""


def _epilog() -> str:
    codes = "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
    return (
        "examples:\n"
        "  svcm init --data-dir ./data && svcm serve --data-dir ./data\n"
        "  svcm login --url http://127.0.0.1:8080\n"
        "  svcm projects create acme --domain acme.com\n"
        "  svcm metrics -p acme --from 7d --by source\n"
        "  svcm COMMAND --help\n\n"
        f"exit status:\n{codes}"
    )


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line (and where to find the help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"svcm: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from svc.cli import (
        accounts,
        admin,
        backup,
        completion,
        deploy,
        events,
        lake,
        metrics,
        nodes,
        projects,
        serve,
        transfer,
    )
    from svc.cli.common import Formatter, connection_options, output_options

    parser = Parser(
        prog="svcm",
        description=DESCRIPTION,
        epilog=_epilog(),
        formatter_class=Formatter,
        parents=[connection_options(), output_options()],
    )
    parser.add_argument("--version", action="version", version=f"svcm {__version__}")
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND", title="commands"),
    )
    p_serve = sub.add_parser(
        "serve",
        help="run the service",
        description="Run the service. Every setting is a flag here and an SVC_* environment "
        "variable (flags win).",
        epilog="examples:\n  svcm serve --port 8080 --data-dir ./data\n"
        "  SVC_DATA_DIR=/var/lib/svc svcm serve --host 0.0.0.0",
        formatter_class=Formatter,
    )
    serve.add_arguments(p_serve)
    admin.register(sub)
    projects.register(sub)
    accounts.register(sub)  # users, teams, invite
    metrics.register(sub)
    transfer.register(sub)
    events.register(sub)
    deploy.register(sub)
    backup.register(sub)
    lake.register(sub)
    nodes.register(sub)
    completion.register(sub, parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    debug = bool(getattr(args, "debug", False)) or os.environ.get("SVCM_DEBUG") == "1"
    _configure_logging(debug)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    from svc.cli.common import Context
    from svc.cli.output import Output

    out = Output(
        json_mode=bool(getattr(args, "json", False)), quiet=bool(getattr(args, "quiet", False))
    )
    ctx = Context(args, out)
    status = EXIT_FAILED
    try:
        try:
            status = int(handler(ctx))
        finally:
            ctx.close()
    except CliError as exc:
        _fail(exc.message, debug)
        status = exc.status
    except KeyboardInterrupt:
        print("svcm: interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`svcm export | head`): leave quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 0
    except Exception as exc:
        _fail(
            f"unexpected error: {type(exc).__name__}: {exc}"
            + ("" if debug else " (run with --debug for the traceback)"),
            debug,
        )
        status = EXIT_FAILED
    return status


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    print(f"svcm: {first}", file=sys.stderr, flush=True)


class _OneLine(logging.Formatter):
    """Log records as one line each; tracebacks only in debug mode."""

    def __init__(self, debug: bool) -> None:
        super().__init__("svcm: %(levelname)s %(name)s: %(message)s")
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        if not self.debug:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return super().format(record)


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(debug))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.ERROR)
    for noisy in ("httpx", "httpcore", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if debug else logging.WARNING)


def _serve(args: argparse.Namespace) -> int:
    import dataclasses

    from svc.cli import serve

    names = {f.name for f in dataclasses.fields(Settings)}
    overrides = {k: v for k, v in vars(args).items() if k in names and v is not None}
    try:
        settings = Settings.from_env(**overrides)
    except ValueError as exc:
        print(f"svcm: {exc}", file=sys.stderr)
        return 2
    return serve.run(settings)
