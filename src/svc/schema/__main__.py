"""``python -m svc.schema [--check] [--root DIR]``: write the wire-format description where the
edge and the TypeScript client read it (:data:`GENERATED`, under the repository's root), or
with ``--check`` only say which committed file differs from what it would write (exit 1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from svc.schema.wire import render

#: The generated files, under the repository's root, each with its form (svc.schema.wire.render).
GENERATED = {
    Path("edge/src/wire-format.json"): "json",
    Path("clients/js/src/limits.ts"): "ts",
}
#: The repository of this source tree (src/svc/schema/__main__.py).
ROOT = Path(__file__).resolve().parents[3]


def stale(root: Path) -> list[Path]:
    """The generated files under ``root`` that differ from what :func:`render` makes."""
    out = []
    for path, form in GENERATED.items():
        file = root / path
        if not file.exists() or file.read_text() != render(form):
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc.schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the repository (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    root: Path = args.root
    if args.check:
        bad = stale(root)
        for path in bad:
            print(f"{path} is stale: run python -m svc.schema", file=sys.stderr)
        return 1 if bad else 0
    for path, form in GENERATED.items():
        (root / path).write_text(render(form))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
