"""The period's chart as a PNG, drawn here: a small pure-Python PNG writer (zlib and struct from
the standard library) and a bar chart, so that mail needs no imaging dependency.

Email clients show an image attached with a Content-ID and referenced by ``cid:`` (most block
remote images by default, and many block ``data:`` URLs): the report attaches this PNG so.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

RGB = tuple[int, int, int]
BACKGROUND: RGB = (255, 255, 255)
BAR: RGB = (79, 70, 229)
PREVIOUS: RGB = (203, 213, 225)
AXIS: RGB = (148, 163, 184)


def png(width: int, height: int, pixels: Sequence[bytearray]) -> bytes:
    """A truecolour PNG of ``height`` rows of ``width`` RGB pixels (3 bytes each)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    raw = b"".join(b"\x00" + bytes(row) for row in pixels)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def bar_chart(
    values: Sequence[int],
    previous: Sequence[int] = (),
    width: int = 600,
    height: int = 160,
) -> bytes:
    """Bars of ``values`` (the period's visitors per hour or day), each with a thin grey bar of
    ``previous`` (the same bucket of the previous period) behind it, scaled to the largest."""
    pad = 4
    rows = [bytearray(BACKGROUND * width) for _ in range(height)]

    def fill(x0: int, x1: int, y0: int, y1: int, color: RGB) -> None:
        x0, x1 = max(0, x0), min(width, x1)
        for y in range(max(0, y0), min(height, y1)):
            rows[y][3 * x0 : 3 * x1] = bytes(color) * (x1 - x0)

    n = max(1, len(values))
    top = max([1, *values, *previous])
    plot = height - 2 * pad - 1
    slot = (width - 2 * pad) / n
    for i in range(len(values)):
        x0 = pad + int(i * slot)
        x1 = pad + int((i + 1) * slot)
        gap = max(1, (x1 - x0) // 6)
        if i < len(previous) and previous[i]:
            h = round(plot * previous[i] / top)
            fill(x0 + gap, x1 - gap, height - pad - 1 - h, height - pad - 1, PREVIOUS)
        if values[i]:
            h = max(1, round(plot * values[i] / top))
            inner = max(1, (x1 - x0) // 4)
            fill(x0 + inner, x1 - inner, height - pad - 1 - h, height - pad - 1, BAR)
    fill(0, width, height - pad - 1, height - pad, AXIS)  # the baseline
    return png(width, height, rows)
