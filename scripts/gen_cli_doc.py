"""Write docs/cli.md from the svcm parser (run: python scripts/gen_cli_doc.py).

With --check, write nothing and exit 1 when docs/cli.md is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from svc.cli.docgen import render

OUT = Path(__file__).resolve().parent.parent / "docs" / "cli.md"

if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv[1:]:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date: run python scripts/gen_cli_doc.py", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
    OUT.write_text(text)
    print(f"wrote {OUT}")
