"""CSV cells no spreadsheet runs as a formula (OWASP, "CSV Injection").

Every CSV the service writes holds text that visitors sent (event names, paths, referrers,
UTM values, properties: anyone with a project's public key sends them). A spreadsheet reads a
cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a formula, so
such a text cell gets a single quote in front (``=HYPERLINK(...)`` -> ``'=HYPERLINK(...)``).
A cell that begins with a single quote gets one too: then the rule is undone without doubt
(every text cell that begins with a quote had one added), and ``svcm import`` reads the
values back as they were stored. Numbers the service writes (counts, times, negative
changes) are numbers, never text cells, and stay as they are.

The export's cells are neutralised by ClickHouse as it writes the CSV
(:func:`svc.queries.sql.csv_cell`); those svc writes in Python by :func:`neutralised`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

#: The first characters that make a text cell get a single quote in front.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def neutralised(value: object) -> object:
    """``value`` as a text cell of a CSV: a string that begins with one of
    :data:`FORMULA_STARTS` with a single quote in front; anything else (a number, None) as
    it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def unneutralised(text: str) -> str:
    """A text cell as :func:`neutralised` had it: its first single quote, if any, off."""
    return text[1:] if text.startswith("'") else text


class Writer:
    """Rows of CSV to a text stream, as :func:`csv.writer` with ``lineterminator="\\n"``
    writes them, but a cell with a carriage return in it is quoted too (``csv`` quotes only
    the characters of its line terminator, so a bare CR cut the row in two for readers),
    and every text cell is :func:`neutralised`. Numbers are written as numbers."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def writerow(self, cells: Iterable[object]) -> None:
        self.stream.write(",".join(_cell(c) for c in cells) + "\n")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = str(neutralised(value))
        if any(c in text for c in ',"\r\n'):
            return '"' + text.replace('"', '""') + '"'
        return text
    return str(value)
