"""A ``/wait`` or ``/join`` reads its run before it starts watching for status changes;
a run that ends in between (run by another process's worker, or simply fast) must still
answer at once, not at the watch's safety-net timeout."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from outlast.api.context import AppContext
from outlast.api.lg import follow
from outlast.api.lg.access import Found
from outlast.service import handle
from outlast.store import EventDraft, Store
from outlast.store.lgthreads import native
from outlast.vocabulary import EventType, RunStatus
from tests.harness import make_settings
from tests.store_contract.support import claimed


async def test_a_wait_on_a_run_that_ended_before_the_watch_answers_without_waiting(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    running, lease = await claimed(store)
    stale = Found(native(running, "assistant"), running, latest=True)
    await store.finish(
        lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}), result={"ok": 1}
    )

    async def no_wait(event: Any, timeout: float) -> bool:
        raise AssertionError("waited for a notification that had already been sent")

    monkeypatch.setattr(handle, "wait_for", no_wait)
    ctx = AppContext(store=store, registry=None, settings=make_settings(), worker=None)  # type: ignore[arg-type]
    over = await follow.wait_until_over(ctx, stale)
    assert over.run.status == RunStatus.COMPLETED
    assert over == replace(stale, run=over.run)
