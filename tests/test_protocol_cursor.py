"""The thread stream's cursor packs (run, seq, sub) into one integer that orders as they do;
a live chunk's places sit after everything its stored event became, before the next one."""

from __future__ import annotations

import itertools

import pytest

from outlast.api.protocol.cursor import K_MAX, PER_CHUNK, SUB_MAX, Position


def test_packing_orders_as_the_positions_do_and_round_trips() -> None:
    positions = [
        Position(pos, seq, sub)
        for pos, seq, sub in itertools.product(
            (0, 1, 2, 524_287), (0, 1, 7, 8_388_607), (0, 1, 255, 256, 2047)
        )
    ]
    packed = [p.packed() for p in sorted(positions)]
    assert packed == sorted(packed) and len(set(packed)) == len(packed)
    assert all(Position.unpacked(p.packed()) == p for p in positions)
    assert max(packed) < 2**53  # a JavaScript number holds it exactly


def test_a_live_chunks_places_follow_its_stored_event_and_name_the_chunk() -> None:
    stored = [Position(3, 40, sub) for sub in (0, 5, SUB_MAX)]
    chunks = [Position.live(3, 40, k, i) for k in (1, 2, K_MAX) for i in range(PER_CHUNK)]
    after = Position(3, 41, 0)
    order = [p.packed() for p in [*stored, *chunks, after]]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert Position.unpacked(chunks[9].packed()).chunk() == (2, 1)
    assert all(p.chunk() is None for p in stored)
    with pytest.raises(OverflowError):
        Position.live(3, 40, K_MAX + 1, 0)
    with pytest.raises(OverflowError):
        Position.live(3, 40, 1, PER_CHUNK)


def test_positions_beyond_the_range_are_refused_not_wrapped() -> None:
    with pytest.raises(OverflowError):
        Position(1 << 19, 0).packed()
    with pytest.raises(OverflowError):
        Position(0, 1 << 23).packed()
    with pytest.raises(OverflowError):
        Position(0, 0, 2048).packed()
    with pytest.raises(ValueError):
        Position.unpacked(-1)
    with pytest.raises(ValueError):
        Position.unpacked(2**53)
