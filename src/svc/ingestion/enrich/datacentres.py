"""Data-centre address ranges: whether a client address belongs to a hosting network.

Contract:

- The ranges come from a text file the operator supplies (``SVC_DATACENTRE_RANGES``): one
  IPv4 or IPv6 CIDR per line (``203.0.113.0/24``, ``2001:db8::/32``; a bare address is its
  own /32 or /128; host bits set are allowed), ``#`` starts a comment, blank lines are
  skipped. svc never downloads such a list: the file is read once, at start-up, by
  :func:`load_ranges`, and a line that is not a CIDR refuses the start with
  :class:`RangesFileError` naming the file and the line.
- :meth:`DataCentreRanges.contains` takes any string and never raises: an address inside one
  of the ranges is True; anything else (another address, an invalid one, ``''``) is False.
  IPv4-mapped IPv6 addresses (``::ffff:192.0.2.1``) are checked as their IPv4 address,
  ``[...]`` brackets and ``%zone`` suffixes are dropped.
- Cost: the ranges are merged (overlapping and adjacent ones become one) into sorted
  start and end numbers per IP version; a check is one address parse and one bisection,
  whatever the number of ranges. The address is only looked at: nothing is kept.
"""

from __future__ import annotations

import bisect
import ipaddress
import socket
from array import array
from pathlib import Path
from typing import Final

__all__ = ["DataCentreRanges", "RangesFileError", "load_ranges"]

_MAPPED_PREFIX: Final = bytes(10) + b"\xff\xff"  # ::ffff:0:0/96
_inet_pton = socket.inet_pton
_from_bytes = int.from_bytes
_V4, _V6 = socket.AF_INET, socket.AF_INET6


class RangesFileError(ValueError):
    """The ranges file cannot be read or one of its lines is not a CIDR."""


class DataCentreRanges:
    """Merged address ranges, IPv4 and IPv6 apart, each as sorted starts and their ends."""

    __slots__ = ("_v4_ends", "_v4_starts", "_v6_ends", "_v6_starts", "count", "source")

    def __init__(self, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network], source: str):
        v4 = _merged(
            [(int(n.network_address), int(n.broadcast_address)) for n in networks if n.version == 4]
        )
        v6 = _merged(
            [(int(n.network_address), int(n.broadcast_address)) for n in networks if n.version == 6]
        )
        # IPv4 numbers fit an unsigned 32-bit array (compact, and bisect works on it)
        self._v4_starts = array("L", [a for a, _ in v4])
        self._v4_ends = array("L", [b for _, b in v4])
        self._v6_starts = [a for a, _ in v6]
        self._v6_ends = [b for _, b in v6]
        #: ranges after merging, and the file they came from
        self.count = len(v4) + len(v6)
        self.source = source

    def contains(self, address: str) -> bool:
        """Whether ``address`` lies in one of the ranges (False for anything not an address)."""
        if ":" not in address:
            try:
                n = _from_bytes(_inet_pton(_V4, address))
            except OSError:
                return False
            return _inside(self._v4_starts, self._v4_ends, n)
        if address[0] == "[":
            address = address[1:].partition("]")[0]
        if "%" in address:
            address = address.partition("%")[0]
        try:
            packed = _inet_pton(_V6, address)
        except OSError:
            return False
        if packed[:12] == _MAPPED_PREFIX:
            return _inside(self._v4_starts, self._v4_ends, _from_bytes(packed[12:]))
        return _inside(self._v6_starts, self._v6_ends, _from_bytes(packed))


def _inside(starts: array[int] | list[int], ends: array[int] | list[int], n: int) -> bool:
    i = bisect.bisect_right(starts, n) - 1
    return i >= 0 and n <= ends[i]


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ranges with the overlapping and adjacent ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def load_ranges(path: str | Path) -> DataCentreRanges:
    """The ranges of the file at ``path``; :class:`RangesFileError` naming the file (and the
    line) when it cannot be read or a line is not a CIDR."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RangesFileError(f"SVC_DATACENTRE_RANGES: cannot read {name}: {exc}") from exc
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for number, line in enumerate(text.splitlines(), start=1):
        cidr = line.partition("#")[0].strip()
        if not cidr:
            continue
        try:
            networks.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            shown = cidr if len(cidr) <= 60 else cidr[:57] + "..."
            raise RangesFileError(
                f"SVC_DATACENTRE_RANGES: {name}, line {number}: {shown!r} is not an IPv4 or "
                "IPv6 CIDR (one a line, like 203.0.113.0/24 or 2001:db8::/32; # comments)"
            ) from None
    return DataCentreRanges(networks, name)
