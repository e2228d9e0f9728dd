"""Write tests/durations.json from the junit XML of a run of the whole suite.

    .venv/bin/python -m pytest -n 2 --dist loadfile --junitxml=run.xml
    .venv/bin/python scripts/update_durations.py run.xml

Each test file's figure is the sum of its tests' times (setup, call and teardown, as junit
reports them), which is what tests/conftest.py orders the files by, longest first."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "durations.json"


def file_of(classname: str) -> str | None:
    """The test file a junit ``classname`` (``tests.x.test_y`` or ``tests.x.test_y.Class``)
    names: the longest prefix that is a file of the repository."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        candidate = "/".join(parts[:n]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return None


def durations(junit: Path) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = file_of(case.get("classname") or "")
        if file is not None:
            seconds[file] += float(case.get("time") or 0)
    return {f: round(s, 1) for f, s in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    measured = durations(Path(argv[0]))
    OUT.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(measured)} files, {sum(measured.values()):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
