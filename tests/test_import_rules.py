"""The packages of svc, what each owns, and which may import which.

:data:`UNITS` is the source of truth: the tests below check every import in ``src/svc``
against it (at the top of a module or inside a function, under ``TYPE_CHECKING`` too), and
docs/architecture.md's "Packages and imports" section is rendered from it
(``python -m tests.test_import_rules`` rewrites that section). A unit is a package of
``svc`` (``svc.storage``) or a module at its top (``svc.auth``); an import inside a unit is
free. An import that breaks a rule and is to be removed by planned work is listed in
:data:`KNOWN` with the issue item that removes it, and the test fails once it is gone, so
that the list stays true.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = (
    "<!-- the import rules, rendered from tests/test_import_rules.py: edit the table there, "
    "then run `python -m tests.test_import_rules` -->"
)
END = "<!-- end of the import rules -->"
EVERYTHING = "*"


@dataclass(frozen=True)
class Unit:
    name: str  # "storage": svc.storage; "svc": the package's own __init__ (its version)
    owns: str
    imports: tuple[str, ...] = ()  # the units it may import, besides the floor; "*": all
    floor: bool = False  # every unit may import it; it imports nothing of svc


UNITS: tuple[Unit, ...] = (
    Unit("svc", "the version", floor=True),
    Unit("errors", "the API's errors and their JSON shape", floor=True),
    Unit("settings", "the one `Settings` object, read from `SVC_*` and flags", floor=True),
    Unit("timeutil", "time helpers (milliseconds, UTC)", floor=True),
    Unit(
        "schema",
        "the event schema: the stored row, the wire format and its limits, the dimensions",
        floor=True,
    ),
    Unit(
        "csv_cells",
        "text cells of CSV that no spreadsheet runs as a formula, and back",
        floor=True,
    ),
    Unit("credentials", "formats, generation and hashing of keys and tokens"),
    Unit("storage", "the ClickHouse event store, its migrations and the rollups"),
    Unit("queries", "the read side: parameters, SQL (only here), execution, shape", ("storage",)),
    Unit("reads", "admission of reads: slots, each project's share, projects in turn"),
    Unit("spool", "the durable on-disk log and the loader into the store", ("storage",)),
    Unit("meta", "projects, hashed keys, salts, usage (SQLite, PostgreSQL)", ("credentials",)),
    Unit(
        "accounts",
        "people, teams, roles, sessions, invitations, resets, two-factor, single sign-on",
        ("credentials", "limits", "mail", "meta"),
    ),
    Unit(
        "auth",
        "a credential to a `Principal`, and its rights",
        ("accounts", "credentials", "meta"),
    ),
    Unit(
        "cluster",
        "several nodes: the background jobs' leases, the state shared in Redis",
        ("meta",),
    ),
    Unit("limits", "the limits' rules: buckets, plans, quotas, client deadlines", ("meta",)),
    Unit(
        "ingestion",
        "POST /analytics' domain: wire format, pipeline steps, enrichment, identity",
        ("cluster", "limits", "meta", "spool", "storage"),
    ),
    Unit(
        "imports",
        "importing exports (svc, Umami, Plausible, GA4) through the ingestion pipeline",
        ("ingestion", "meta", "queries", "storage"),
    ),
    Unit(
        "saved",
        "a project's saved goals, funnels, segments and annotations: tables, validation",
        ("meta", "queries", "storage"),
    ),
    Unit(
        "mail",
        "the mail outbox and its SMTP worker, email reports, traffic and goal alerts",
        ("credentials", "meta", "queries", "saved", "storage"),
    ),
    Unit(
        "retention",
        "how long each project's raw events and rollups are kept, and the job that deletes",
        ("meta", "queries", "storage"),
    ),
    Unit(
        "runtime",
        "the running service: every long-lived part, started and stopped in order",
        (
            "auth",
            "cluster",
            "credentials",
            "ingestion",
            "limits",
            "mail",
            "meta",
            "queries",
            "reads",
            "retention",
            "spool",
            "storage",
        ),
    ),
    Unit(
        "projects",
        "project provisioning, behind /projects, `svcm projects` and `svcm keys`",
        ("auth", "credentials", "limits", "meta", "retention", "runtime"),
    ),
    Unit(
        "lake",
        "the raw-event lake: each project's UTC days as Parquet, in a directory or S3",
        ("cluster", "queries", "runtime", "storage"),
    ),
    Unit(
        "backup",
        "backups of the running service (a directory or S3), scheduled or not, and their "
        "restore into an empty data directory; the background operations",
        ("lake", "meta", "runtime", "spool", "storage"),
    ),
    Unit(
        "http",
        "thin handlers, the one POST /analytics handler, the limits middleware, the HTTP server",
        (
            "accounts",
            "auth",
            "backup",
            "cluster",
            "credentials",
            "ingestion",
            "lake",
            "limits",
            "mail",
            "meta",
            "projects",
            "queries",
            "reads",
            "retention",
            "runtime",
            "saved",
            "spool",
            "storage",
        ),
    ),
    Unit(
        "app",
        "`create_app`: routes, lifespan, JSON errors",
        ("backup", "http", "limits", "mail", "projects", "runtime"),
    ),
    Unit("cli", "`svcm`, the operator's tool: arguments, progress, output", (EVERYTHING,)),
    Unit("__main__", "`python -m svc`: `svcm`", ("cli",)),
)


@dataclass(frozen=True)
class Known:
    """An import that breaks the rules, until the work named removes it."""

    importer: str  # module
    imported: str  # module
    until: str


KNOWN: tuple[Known, ...] = ()

BY_NAME = {unit.name: unit for unit in UNITS}
FLOOR = frozenset(unit.name for unit in UNITS if unit.floor)


def modules() -> dict[str, Path]:
    """Every module of src/svc by its dotted name (a package by its own)."""
    found: dict[str, Path] = {}
    for path in sorted((SRC / "svc").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "svc"


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of svc that ``module`` imports, anywhere in it."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def add(name: str) -> None:
        while name and name not in known:  # svc.x.y.Name -> svc.x.y
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:  # `from svc import errors` imports svc.errors
                name = f"{base}.{alias.name}"
                add(name if name in known else base)
    return {name for name in found if name.split(".")[0] == "svc"}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports_of(module, path, known) for module, path in known.items()}


def may_import(importer: str, imported: str) -> bool:
    if imported == importer or imported in FLOOR:
        return True
    allowed = BY_NAME[importer].imports
    return EVERYTHING in allowed or imported in allowed


# the tests ----------------------------------------------------------------------------------


def test_every_unit_is_in_the_table() -> None:
    present = {unit_of(module) for module in modules()}
    missing = present - set(BY_NAME)
    assert not missing, (
        f"{sorted(missing)} not in UNITS of tests/test_import_rules.py: add a row (what it "
        "owns, what it may import), then run `python -m tests.test_import_rules`"
    )
    assert not set(BY_NAME) - present, f"UNITS names what does not exist: {set(BY_NAME) - present}"
    for unit in UNITS:
        assert set(unit.imports) <= {*BY_NAME, EVERYTHING}, unit.name
        assert not (unit.floor and unit.imports), f"{unit.name}: the floor imports nothing"


def test_imports_follow_the_table() -> None:
    known = {(k.importer, k.imported) for k in KNOWN}
    broken = []
    for importer, targets in sorted(graph().items()):
        for imported in sorted(targets):
            a, b = unit_of(importer), unit_of(imported)
            if not may_import(a, b) and (importer, imported) not in known:
                broken.append(f"{importer} imports {imported} ({a} may not import {b})")
    assert not broken, "\n".join(broken)


def test_known_exceptions_still_exist_and_break_a_rule() -> None:
    edges = graph()
    for k in KNOWN:
        assert k.imported in edges.get(k.importer, set()), (
            f"{k.importer} no longer imports {k.imported}: remove it from KNOWN"
        )
        assert not may_import(unit_of(k.importer), unit_of(k.imported)), k


def test_the_rules_of_issue_17() -> None:
    """The table itself keeps these (loosening it is a decision, not an accident)."""
    assert not may_import("limits", "http")  # limits holds rules only
    assert not may_import("ingestion", "http")
    assert not may_import("storage", "queries")
    others = [unit.name for unit in UNITS]
    assert {u for u in others if u != "cli" and may_import(u, "cli")} == {"__main__"}
    assert all(may_import("cli", u) for u in others)  # cli may import everything
    assert {u for u in others if u != "http" and may_import(u, "http")} == {"app", "cli"}


def test_no_module_imports_itself_through_others() -> None:
    """No import circle between modules (such as svcm's parser and its completion)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(edges[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_the_product_imports_no_test_code() -> None:
    """Nothing of the tests reaches the product: the ClickHouse double
    (tests/clickhouse_double) above all, which stands in for a server in tests only."""
    found = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [f"{module} imports {n}" for n in names if n.split(".")[0] == "tests"]
        if "clickhouse_double" in path.read_text():
            found.append(f"{module} names the ClickHouse double")
    assert not found, found


def test_the_architecture_doc_lists_the_table() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"docs/architecture.md lacks {BEGIN!r}"
    shown = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    assert shown == render(), "docs/architecture.md is stale: run python -m tests.test_import_rules"


# the document -------------------------------------------------------------------------------


def render() -> str:
    """The table of docs/architecture.md (between the markers)."""

    def name(unit: str) -> str:
        return "`svc`" if unit == "svc" else f"`svc.{unit}`"

    floor = [unit for unit in UNITS if unit.floor]
    lines = [
        "",
        "| package | owns | may import |",
        "|---|---|---|",
    ]
    for unit in floor:
        lines.append(f"| {name(unit.name)} | {unit.owns} | nothing (the floor) |")
    for unit in UNITS:
        if unit.floor:
            continue
        if EVERYTHING in unit.imports:
            allowed = "everything"
        else:
            allowed = ", ".join(name(other) for other in unit.imports) or "the floor only"
        lines.append(f"| {name(unit.name)} | {unit.owns} | {allowed} |")
    rule = (
        f"Every package may import the floor ({', '.join(name(u.name) for u in floor)}). "
        "Nothing imports `svc.cli` (but `python -m svc`), and no module imports itself "
        "through others."
    )
    lines += ["", textwrap.fill(rule, 96), ""]
    if KNOWN:
        lines += [
            "Known exceptions, each to be removed by the work named:",
            "",
            *(
                textwrap.fill(
                    f"- `{k.importer}` imports `{k.imported}`: {k.until}.",
                    96,
                    subsequent_indent="  ",
                )
                for k in KNOWN
            ),
            "",
        ]
    return "\n".join(lines)


def write() -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + render() + text[end:])


if __name__ == "__main__":
    write()
