"""Fixtures of the contract suite; ``store`` (both backends) comes from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from outlast.store import Store
from tests.store_contract.support import Notes


@pytest.fixture
def notes(store: Store) -> Iterator[Notes]:
    recorder = Notes(store)
    try:
        yield recorder
    finally:
        recorder.close()
