"""Fixtures of the contract suite; ``store`` (both backends) comes from tests/conftest.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from outlast.store import Store
from tests.store_contract.support import Notes


@pytest.fixture
async def notes(store: Store) -> AsyncIterator[Notes]:
    recorder = Notes(store)
    await recorder.take()  # listening on every channel, and nothing seen yet
    try:
        yield recorder
    finally:
        recorder.close()
