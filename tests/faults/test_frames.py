"""The spool's record format under damage: no damaged byte ever yields a wrong record, and one
damaged byte costs only the records it touches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from svc.spool.frames import HEADER_SIZE, frame, scan

lines_st = st.lists(
    st.binary(min_size=0, max_size=40).map(lambda b: b.replace(b"\n", b" ") + b"\n"),
    min_size=1,
    max_size=5,
)
payloads_st = st.lists(lines_st.map(b"".join), min_size=1, max_size=12)


def _segment(payloads: list[bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    data, bounds = b"", []
    for p in payloads:
        start = len(data)
        data += frame(p, p.count(b"\n"))
        bounds.append((start, len(data)))
    return data, bounds


@given(payloads_st)
def test_an_intact_segment_reads_back_whole(payloads: list[bytes]) -> None:
    data, _ = _segment(payloads)
    found = scan(data)
    assert [r.payload for r in found.records] == payloads
    assert not found.bad and found.torn_at is None
    assert found.events == sum(p.count(b"\n") for p in payloads)


@settings(max_examples=300)
@given(payloads_st, st.data())
def test_one_flipped_byte_costs_only_its_record(
    payloads: list[bytes], data_st: st.DataObject
) -> None:
    data, bounds = _segment(payloads)
    at = data_st.draw(st.integers(0, len(data) - 1))
    bit = data_st.draw(st.integers(0, 7))
    damaged = bytearray(data)
    damaged[at] ^= 1 << bit
    found = scan(bytes(damaged))
    hit = next(i for i, (a, b) in enumerate(bounds) if a <= at < b)
    good = [p for i, p in enumerate(payloads) if i != hit]
    got = [r.payload for r in found.records]
    # never a wrong record; every untouched record back, in order
    assert got == good, (at, bit)
    lost = [r for r in found.bad] + ([found.torn_at] if found.torn_at is not None else [])
    assert lost, "the damage must be reported"
    # what is reported bad covers the damaged record and nothing else
    a, b = bounds[hit]
    for region in found.bad:
        assert a <= region.start and region.end <= b


@given(payloads_st, st.data())
def test_a_cut_anywhere_keeps_every_whole_record_before_it(
    payloads: list[bytes], data_st: st.DataObject
) -> None:
    data, bounds = _segment(payloads)
    cut = data_st.draw(st.integers(0, len(data)))
    found = scan(data[:cut])
    whole = [p for p, (_, b) in zip(payloads, bounds, strict=True) if b <= cut]
    assert [r.payload for r in found.records] == whole
    assert not found.bad
    ends = {0} | {b for _, b in bounds}
    assert (found.torn_at is None) == (cut in ends)


def test_garbage_between_records_is_one_bad_region() -> None:
    one, two = frame(b'{"a":1}\n', 1), frame(b'{"b":2}\n', 1)
    found = scan(one + b"\x00" * 100 + two)
    assert [r.payload for r in found.records] == [b'{"a":1}\n', b'{"b":2}\n']
    assert [(r.start, r.end) for r in found.bad] == [(len(one), len(one) + 100)]


def test_a_length_that_lies_is_not_followed_past_good_records() -> None:
    one, two, three = (frame(b'{"n":%d}\n' % i, 1) for i in range(3))
    damaged = bytearray(one + two + three)
    damaged[len(one) + 4] = 0xFF  # the length of record two
    found = scan(bytes(damaged))
    assert [r.payload for r in found.records] == [b'{"n":0}\n', b'{"n":2}\n']
    assert found.bad[0].start == len(one) and found.bad[0].end == len(one) + len(two)
    assert HEADER_SIZE == 16


def test_legacy_segments_of_plain_lines_still_read() -> None:
    found = scan(b'{"a":1}\n{"b":2}\n{"c":')
    assert found.legacy and [r.payload for r in found.records] == [b'{"a":1}\n', b'{"b":2}\n']
    assert found.torn_at == 16
