"""What svcm prints: tables and records for people, plain lines for pipes, JSON for scripts.

- stdout carries the result only; notes, warnings, progress bars and summaries go to stderr.
- On a terminal, tables are drawn with ``rich``; when stdout is not a terminal they are plain
  tab-separated lines without a header (like ``gh``), one row a line, for ``cut`` and ``awk``.
- ``--json`` prints the service's JSON as it is (indented), the same in both cases.
- Progress bars are drawn on stderr only when it is a terminal and ``--quiet`` is not given.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console


class Progress(Protocol):
    def advance(self, n: int = 1) -> None: ...

    def total(self, total: int | None) -> None: ...


class _NoProgress:
    def advance(self, n: int = 1) -> None:
        pass

    def total(self, total: int | None) -> None:
        pass


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def total(self, total: int | None) -> None:
        self._progress.update(self._task, total=total)


def text(value: Any, tty: bool = False) -> str:
    """A cell: None as '-' (or '' in plain output), lists joined, numbers as they are."""
    if value is None or value == "":
        return "-" if tty else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(text(v) for v in value) or ("-" if tty else "")
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, int) and tty:
        return f"{value:,}"
    return str(value)


class Output:
    def __init__(self, *, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.stdout_tty = _isatty(sys.stdout)
        self.stderr_tty = _isatty(sys.stderr)
        self._console: Console | None = None
        self._err_console: Console | None = None

    # consoles -------------------------------------------------------------------------------

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=False)
        return self._console

    @property
    def err_console(self) -> Console:
        if self._err_console is None:
            from rich.console import Console

            self._err_console = Console(stderr=True, highlight=False)
        return self._err_console

    # results (stdout) -----------------------------------------------------------------------

    def json(self, doc: Any) -> None:
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def line(self, value: str) -> None:
        sys.stdout.write(value + "\n")
        sys.stdout.flush()

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        title: str | None = None,
        right: Sequence[str] = (),
        empty: str = "nothing to show",
    ) -> None:
        """Rows as a table on a terminal, as tab-separated lines otherwise."""
        if not self.stdout_tty:
            for row in rows:
                self.line("\t".join(text(v).replace("\t", " ") for v in row))
            return
        from rich.table import Table
        from rich.text import Text

        if not rows:
            self.note(empty)
            return
        table = Table(title=title, title_justify="left", box=None, header_style="bold")
        for i, col in enumerate(columns):
            table.add_column(
                col,
                justify="right" if col in right else "left",
                overflow="fold",
                no_wrap=i == 0,
            )
        for row in rows:
            table.add_row(*(Text(text(v, tty=True)) for v in row))
        self.console.print(table)

    def record(self, pairs: Sequence[tuple[str, Any]], *, title: str | None = None) -> None:
        """Name/value pairs: aligned on a terminal, ``name<TAB>value`` lines otherwise."""
        if not self.stdout_tty:
            for name, value in pairs:
                self.line(f"{name}\t{text(value)}")
            return
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column(overflow="fold")
        for name, value in pairs:
            grid.add_row(Text(name), Text(text(value, tty=True)))
        if title:
            self.console.print(Text(title, style="bold underline"))
        self.console.print(grid)

    def secret(self, label: str, value: str) -> None:
        """A credential shown once: alone on its line, so it is easy to copy."""
        if not self.stdout_tty:
            self.line(value)
            return
        from rich.text import Text

        self.console.print(Text(f"{label}:", style="bold"), Text(value, style="bold green"))

    # notes (stderr) -------------------------------------------------------------------------

    def note(self, message: str) -> None:
        if self.quiet:
            return
        if self.stderr_tty:
            from rich.text import Text

            self.err_console.print(Text(message, style="dim"))
        else:
            print(message, file=sys.stderr, flush=True)

    def done(self, message: str) -> None:
        if self.quiet:
            return
        if self.stderr_tty:
            from rich.text import Text

            self.err_console.print(Text("✓ ", style="green") + Text(message))
        else:
            print(message, file=sys.stderr, flush=True)

    def warn(self, message: str) -> None:
        if self.stderr_tty:
            from rich.text import Text

            self.err_console.print(Text("! ", style="yellow bold") + Text(message))
        else:
            print(f"svcm: warning: {message}", file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def progress(
        self, description: str, total: int | None = None, *, unit: str = "rows"
    ) -> Iterator[Progress]:
        """A progress bar on stderr (a terminal only); ``unit`` is ``rows`` or ``bytes``."""
        if self.quiet or not self.stderr_tty:
            yield _NoProgress()
            return
        from rich import progress as rp

        columns: list[Any] = [
            rp.SpinnerColumn(),
            rp.TextColumn("{task.description}"),
            rp.BarColumn(),
        ]
        if unit == "bytes":
            columns += [rp.DownloadColumn(), rp.TransferSpeedColumn()]
        else:
            columns += [rp.MofNCompleteColumn(), rp.TaskProgressColumn()]
        columns.append(rp.TimeElapsedColumn())
        with rp.Progress(*columns, console=self.err_console, transient=True) as bar:
            task = bar.add_task(description, total=total)
            yield _RichProgress(bar, task)

    def confirm(self, question: str) -> bool:
        """Ask on the terminal; False when there is none to ask on."""
        if not (_isatty(sys.stdin) and self.stderr_tty):
            return False
        from rich.prompt import Confirm

        return bool(Confirm.ask(question, console=self.err_console, default=False))

    def ask(self, question: str, *, password: bool = False) -> str:
        from rich.prompt import Prompt

        return str(Prompt.ask(question, console=self.err_console, password=password))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
