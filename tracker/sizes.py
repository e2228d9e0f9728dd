"""Prints the sizes of the built browser scripts: the default build, what each extension adds to
it, and the largest combination (`make tracker-size`).

Measured as the service serves them and as tests/test_script_serving.py counts them: the bytes
of the file (minified), gzip level 9, brotli quality 11 (when the brotli module is installed).
A size, not a timing: the machine's load does not change it.

    python3 tracker/sizes.py [STATIC_DIR]     (default: src/svc/static)
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import sys
from pathlib import Path

EXTENSIONS = ("404", "downloads", "engagement", "outbound", "vitals")  # as in build.mjs
LIMIT_MIN, LIMIT_GZ, LIMIT_SPEC = 1024, 600, 2048


def sizes(data: bytes) -> tuple[int, int, int | None]:
    brotli = importlib.import_module("brotli") if importlib.util.find_spec("brotli") else None
    br = len(brotli.compress(data, quality=11)) if brotli else None
    return len(data), len(gzip.compress(data, 9, mtime=0)), br


def main() -> None:
    static = Path(sys.argv[1] if len(sys.argv) > 1 else "src/svc/static")

    def read(names: tuple[str, ...]) -> bytes:
        return (static / (f"svc.{'.'.join(names)}.js" if names else "svc.js")).read_bytes()

    base = sizes(read(()))
    br = f", {base[2]} brotli" if base[2] is not None else ""
    print(
        f"svc.js: {base[0]} bytes minified, {base[1]} gzipped{br} (budget {LIMIT_MIN:,} / "
        f"{LIMIT_GZ}; Plausible 3,005 / 1,334; Umami 3.1.0 4,595 / 2,246)"
    )
    for name in EXTENSIONS:
        size = sizes(read((name,)))
        br = f", brotli +{size[2] - base[2]}" if size[2] is not None and base[2] else ""
        print(
            f"  +{name}: {size[0]} minified (+{size[0] - base[0]}),"
            f" {size[1]} gzipped (+{size[1] - base[1]}){br}"
        )
    combos = [c for n in range(1, 6) for c in itertools.combinations(EXTENSIONS, n)]
    largest = max(combos, key=lambda c: len(read(c)))
    everything = sizes(read(EXTENSIONS))
    print(
        f"  all five: {everything[0]} minified, {everything[1]} gzipped; the largest of the"
        f" {len(combos)} combinations: {'.'.join(largest)}, {len(read(largest))} minified"
        f" (limit {LIMIT_SPEC:,})"
    )


if __name__ == "__main__":
    main()
