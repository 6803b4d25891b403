"""The thread stream's cursor packs (run, seq, sub) into one integer that orders as they do."""

from __future__ import annotations

import itertools

import pytest

from outlast.api.protocol.cursor import Position


def test_packing_orders_as_the_positions_do_and_round_trips() -> None:
    positions = [
        Position(pos, seq, sub)
        for pos, seq, sub in itertools.product(
            (0, 1, 2, 1_048_575), (0, 1, 7, 33_554_431), (0, 1, 255)
        )
    ]
    packed = [p.packed() for p in sorted(positions)]
    assert packed == sorted(packed) and len(set(packed)) == len(packed)
    assert all(Position.unpacked(p.packed()) == p for p in positions)
    assert max(packed) < 2**53  # a JavaScript number holds it exactly


def test_positions_beyond_the_range_are_refused_not_wrapped() -> None:
    with pytest.raises(OverflowError):
        Position(1 << 20, 0).packed()
    with pytest.raises(OverflowError):
        Position(0, 1 << 25).packed()
    with pytest.raises(OverflowError):
        Position(0, 0, 256).packed()
    with pytest.raises(ValueError):
        Position.unpacked(-1)
    with pytest.raises(ValueError):
        Position.unpacked(2**53)
