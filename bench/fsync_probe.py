"""The disk's floor under acknowledged ingestion: how long one group commit's fdatasync takes.

Every acknowledged POST /analytics waits for one fdatasync of the spool (group commit: the
requests that arrive during one fsync share the next). So with C connections the service can
answer at most about C / (fsync time + handling) requests a second, and no request's latency
is below one fsync. This measures, on the file system of ``--dir``, writes of ``--size`` bytes
followed by fdatasync, three ways:

* append: ``O_APPEND`` writes (what the spool did first): each fdatasync also commits the
  file-size change to the ext4 journal;
* overwrite of pre-zeroed space: the file was filled with zeros beforehand, so fdatasync only
  writes the data blocks and flushes the device cache (no journal commit);
* fallocate: space reserved with posix_fallocate (unwritten extents: converting them is a
  metadata change, so the journal is still involved).

Run: ``.venv/bin/python bench/fsync_probe.py [--dir /path/on/the/data/disk] [-n 300]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _stats(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    n = len(s)
    return {
        "p50_ms": statistics.median(s) * 1e3,
        "p90_ms": s[int(n * 0.9)] * 1e3,
        "p99_ms": s[min(n - 1, int(n * 0.99))] * 1e3,
        "max_ms": s[-1] * 1e3,
    }


def probe(directory: Path, n: int, size: int) -> dict[str, dict[str, float]]:
    chunk = b"x" * (size - 1) + b"\n"
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(dir=directory, prefix="fsync-probe-") as tmp:
        path = Path(tmp) / "f"

        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
        samples = []
        for _ in range(n):
            os.write(fd, chunk)
            t = time.perf_counter()
            os.fdatasync(fd)
            samples.append(time.perf_counter() - t)
        os.close(fd)
        out["append + fdatasync"] = _stats(samples)

        for name in ("overwrite pre-zeroed + fdatasync", "fallocated + fdatasync"):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            if name.startswith("overwrite"):
                os.write(fd, b"\0" * (n * size))
            else:
                os.posix_fallocate(fd, 0, n * size)
            os.fsync(fd)
            samples = []
            for i in range(n):
                os.pwrite(fd, chunk, i * size)
                t = time.perf_counter()
                os.fdatasync(fd)
                samples.append(time.perf_counter() - t)
            os.close(fd)
            out[name] = _stats(samples)
    return out


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("-n", type=int, default=300, help="fsyncs per way")
    p.add_argument("--size", type=int, default=8192, help="bytes per write (one group)")
    args = p.parse_args(argv)
    result = probe(args.dir, args.n, args.size)
    print(f"fdatasync of {args.size}-byte groups in {args.dir} ({args.n} each):")
    for name, s in result.items():
        print(
            f"  {name:34} p50 {s['p50_ms']:6.2f}  p90 {s['p90_ms']:6.2f}  "
            f"p99 {s['p99_ms']:6.2f}  max {s['max_ms']:6.2f} ms"
        )
    return result


if __name__ == "__main__":
    main()
