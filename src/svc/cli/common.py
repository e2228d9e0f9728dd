"""What every svcm command shares: the parser helpers, the global options and the context
(output, configuration, the connection, the project)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from svc.cli import config
from svc.cli.connection import Api, DirectApi, HttpApi
from svc.cli.errors import EXIT_UNREACHABLE, CliError, UsageError
from svc.cli.output import Output

Handler = Callable[["Context"], int]

PROJECT_PREFIX = "svc_proj_"


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples keep their line breaks; option help is wrapped."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


def command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    examples: Sequence[str],
    handler: Handler | None = None,
    parents: Sequence[argparse.ArgumentParser] = (),
    aliases: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """A (sub)command with a one-line summary, a description and examples in its ``--help``."""
    epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples) if examples else None
    parser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=Formatter,
        parents=list(parents),
        aliases=list(aliases),
    )
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def group(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    examples: Sequence[str],
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    """A command with subcommands; alone it prints its help."""
    parser = command(sub, name, summary=summary, description=description, examples=examples)
    children = parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND", title="commands")

    def show_help(ctx: Context) -> int:
        parser.print_help()
        return 0

    parser.set_defaults(handler=show_help)
    return parser, children


def connection_options() -> argparse.ArgumentParser:
    """``--url``, ``--token``, ``--data-dir``: where the service is (see :mod:`svc.cli.config`)."""
    parent = argparse.ArgumentParser(add_help=False)
    g = parent.add_argument_group("connection")
    g.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="the service's URL (env SVC_URL; default: the one saved by `svcm login`)",
    )
    g.add_argument(
        "--token",
        default=argparse.SUPPRESS,
        metavar="TOKEN",
        help="admin token or secret key (env SVC_TOKEN; default: the one saved by `svcm login`)",
    )
    g.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="work on this data directory in-process instead of a service (no service may be "
        "running on it)",
    )
    return parent


def output_options(*, json: bool = True) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    g = parent.add_argument_group("output")
    if json:
        g.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print the result as JSON",
        )
    g.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars or notes on stderr",
    )
    g.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show debug logs and, on failure, the traceback",
    )
    return parent


def project_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-p",
        "--project",
        default=argparse.SUPPRESS,
        metavar="PROJECT",
        help="project id or name (env SVC_PROJECT; default: the project of a secret key)",
    )


def project_id(value: str) -> str:
    """``acme`` and ``svc_proj_acme`` both name project ``svc_proj_acme``."""
    value = value.strip()
    if not value:
        raise UsageError("the project is empty")
    return value if value.startswith(PROJECT_PREFIX) else PROJECT_PREFIX + value


class Context:
    """One run of a command: its arguments, its output and (made on first use) its connection."""

    def __init__(self, args: argparse.Namespace, out: Output) -> None:
        self.args = args
        self.out = out
        self._api: Api | None = None
        self._file: config.FileConfig | None = None

    def opt(self, name: str, default: Any = None) -> Any:
        return getattr(self.args, name, default)

    @property
    def json(self) -> bool:
        return bool(self.opt("json", False))

    @property
    def file(self) -> config.FileConfig:
        if self._file is None:
            self._file = config.load()
            if self._file.insecure_mode and (self._file.token or self._file.url):
                self.out.warn(
                    f"{self._file.path} can be read by other users; run: chmod 600 "
                    f"{self._file.path}"
                )
        return self._file

    # the connection -------------------------------------------------------------------------

    @property
    def direct(self) -> bool:
        return bool(self.opt("data_dir"))

    def api(self) -> Api:
        if self._api is None:
            self._api = self._connect()
        return self._api

    def _connect(self) -> Api:
        data_dir = self.opt("data_dir")
        if data_dir:
            if self.opt("url"):
                raise UsageError("give either --url or --data-dir, not both")
            return DirectApi(Path(data_dir))
        url, token = self.endpoint()
        return HttpApi(url, token)

    def url(self) -> str:
        url = self.opt("url") or os.environ.get("SVC_URL") or self.file.url
        if not url:
            raise CliError(
                "no service to talk to: give --url (or set SVC_URL, or run `svcm login`), or "
                "--data-dir for a data directory",
                EXIT_UNREACHABLE,
            )
        return config.normalize_url(url)

    def endpoint(self) -> tuple[str, str]:
        url = self.url()
        token = self.opt("token") or os.environ.get("SVC_TOKEN", "")
        if not token and self.file.token and config.same_url(url, self.file.url):
            token = self.file.token
        return url, token

    def close(self) -> None:
        if self._api is not None:
            api, self._api = self._api, None
            api.close()

    # the project ----------------------------------------------------------------------------

    def given_project(self) -> str | None:
        """The project named by ``--project``, ``SVC_PROJECT`` or the saved configuration."""
        given = self.opt("project") or os.environ.get("SVC_PROJECT", "")
        if (
            not given
            and self.file.project
            and not self.direct
            and config.same_url(self.url(), self.file.url)
        ):
            given = self.file.project
        return project_id(given) if given else None

    def project(self) -> str:
        """The project a command is about: the one named, or the only project the credential
        may see."""
        given = self.given_project()
        if given:
            return given
        api = self.api()
        if api.mode == "http" and api.token and not api.is_admin:
            projects = api.get("/projects").get("projects", [])
            if len(projects) == 1:
                return str(projects[0]["id"])
        raise UsageError("name the project: --project <id or name> (or set SVC_PROJECT)")


# dates --------------------------------------------------------------------------------------

_RELATIVE = re.compile(r"^(\d{1,4})d$")


def parse_day(value: str, flag: str, tz: str | None) -> str:
    """``YYYY-MM-DD``, ``today``, ``yesterday`` or ``<N>d`` (N days before today), as
    ``YYYY-MM-DD``; relative days are counted in ``tz`` (default UTC)."""
    value = value.strip().lower()
    try:
        zone = ZoneInfo(tz) if tz else UTC
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(f"--tz: not an IANA time zone: {tz!r}") from exc
    today = datetime.now(zone).date()
    if value == "today":
        return today.isoformat()
    if value == "yesterday":
        return (today - timedelta(days=1)).isoformat()
    match = _RELATIVE.match(value)
    if match:
        return (today - timedelta(days=int(match.group(1)))).isoformat()
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise UsageError(
            f"{flag}: {value!r} is not a date: use YYYY-MM-DD, today, yesterday or <N>d"
        ) from None


def range_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--from",
        dest="from_",
        required=required,
        metavar="DAY",
        help="first day: YYYY-MM-DD, today, yesterday or <N>d (N days ago)",
    )
    parser.add_argument(
        "--to", metavar="DAY", help="last day, included (default: today in the time zone)"
    )
    parser.add_argument(
        "--tz",
        metavar="ZONE",
        help="IANA time zone of the days (default: the project's)",
    )


def range_params(ctx: Context) -> list[tuple[str, str]]:
    """``from``, ``to`` and ``tz`` of a command's range. Relative days (``today``,
    ``yesterday``, ``<N>d``) are days of the zone the range is in: ``--tz``, else the
    project's (the service applies it too); an absolute date needs no zone."""
    tz = ctx.opt("tz")
    days = [("from", "--from", ctx.opt("from_")), ("to", "--to", ctx.opt("to"))]
    zone = tz
    if not tz and any(v and not _ABSOLUTE.match(v.strip()) for _, _, v in days):
        zone = project_timezone(ctx)
    params = [(name, parse_day(value, flag, zone)) for name, flag, value in days if value]
    if tz:
        params.append(("tz", tz))
    return params


_ABSOLUTE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def project_timezone(ctx: Context) -> str:
    """The time zone of the command's project, UTC when it cannot be read."""
    from urllib.parse import quote

    try:
        project = ctx.api().get("/projects/" + quote(ctx.project(), safe=""))
    except (CliError, UsageError):
        return "UTC"
    return str(project.get("timezone") or "UTC")
