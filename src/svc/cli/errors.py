"""How svcm fails: one clear line on stderr and a documented exit status.

Every expected failure is a :class:`CliError`; ``main`` prints its message and exits with its
status. Anything else is a bug: one line naming it, the traceback only with ``--debug``.
"""

from __future__ import annotations

#: The command did what it was asked.
EXIT_OK = 0
#: The command failed: the service refused the request, a row or a file was wrong, ...
EXIT_FAILED = 1
#: The command line was wrong (argparse uses 2 as well).
EXIT_USAGE = 2
#: No service or data directory to talk to, or the credential was refused (401/403).
EXIT_UNREACHABLE = 3
#: ``svcm import`` finished, but refused some rows (the summary says which and why).
EXIT_PARTIAL = 4
#: Interrupted with Ctrl-C.
EXIT_INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success"),
    (
        EXIT_FAILED,
        "the command failed (the service refused the request, a file was unreadable, ...)",
    ),
    (EXIT_USAGE, "wrong usage (unknown option, bad value)"),
    (EXIT_UNREACHABLE, "no service or data directory to talk to, or the credential was refused"),
    (EXIT_PARTIAL, "import finished but refused some rows (see the summary)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)


class CliError(Exception):
    """An expected failure: ``message`` is printed as it is, ``status`` is the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class UsageError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)
