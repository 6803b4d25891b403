"""The CLI's processes set their startup heap aside from the garbage collector; an app
built by a test or a notebook does not (outlast/heap.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from outlast import heap
from outlast.api.app import create_app
from tests.harness import make_settings


@pytest.fixture
def collector() -> Iterator[None]:
    """Give the test process its collector back as it was."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_freezes_what_exists_and_raises_the_young_threshold(collector: None) -> None:
    gc.unfreeze()
    keep = [[i] for i in range(1000)]  # containers the collector tracks
    heap.settle()
    assert gc.get_freeze_count() >= len(keep)
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD


@pytest.mark.parametrize("settle", [True, False])
async def test_an_app_settles_its_heap_only_when_asked(
    settle: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(heap, "settle", lambda: calls.append(None))
    settings = make_settings(data_dir=tmp_path)
    app = create_app(settings, with_worker=False, settle_heap=settle)
    async with app.router.lifespan_context(app):
        assert len(calls) == (1 if settle else 0)
