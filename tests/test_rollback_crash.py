"""A rollback outlives the process that accepted it: LangGraph's own client cancels a run
with ``action=rollback``, the server that took the cancel is SIGKILLed right after the
cancel commits (fault point ``api.after_cancel``, before it answers), and another server
takes the run over and rolls it back: the thread is where it was before the run. The
rollback was asked in the cancel's transaction, so nothing of it lived only in the dead
process (it used to be done by the HTTP handler, and died with it)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from outlast import faults
from outlast.store import RunStatus, Store
from outlast.vocabulary import EventType
from tests.harness import eventually
from tests.procs import all_events, assert_exact_log, kill, start_server, wait_for_status

pytestmark = pytest.mark.slow

SLOW = {"configurable": {"steps": 200, "delay": 0.1}}


async def test_a_rollback_survives_a_sigkill_of_the_server_that_took_the_cancel(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    first, url = start_server(db_url, tmp_path / "s1.log", OUTLAST_FAULTS=faults.AFTER_CANCEL)
    second = None
    clients = [get_client(url=url)]
    client = clients[0]
    try:
        thread = (await client.threads.create())["thread_id"]
        quick = {"configurable": {"steps": 2, "delay": 0}}
        await client.runs.wait(thread, "lg_slow", input={}, config=quick)
        kept = (await client.threads.get_state(thread))["values"]
        assert kept == {"done": [0, 1]}
        run_id = (await client.runs.create(thread, "lg_slow", input={}, config=SLOW))["run_id"]

        async def moved_on() -> bool:  # the run has checkpointed a step of its own
            values: Any = (await client.threads.get_state(thread))["values"]
            return bool(values != kept)

        await eventually(moved_on, what="a step of the run to roll back")
        with pytest.raises(httpx.TransportError):  # the server died before it answered
            await client.runs.cancel(thread, run_id, action="rollback")
        assert first.wait(timeout=60) == -signal.SIGKILL
        asked = await store.get_run(run_id)
        assert asked is not None and asked.status == RunStatus.CANCELLING
        assert asked.error is not None and asked.error["rollback"] is True

        second, url = start_server(db_url, tmp_path / "s2.log")
        final = await wait_for_status(store, run_id, {"cancelled"}, proc=second)
        client = get_client(url=url)
        clients.append(client)
        assert (await client.threads.get_state(thread))["values"] == kept
        with pytest.raises(NotFoundError):  # gone for LangGraph's clients, with the cancel
            await client.runs.get(thread, run_id)
    finally:
        for each in clients:
            await each.aclose()
        kill(first)
        if second is not None:
            kill(second, signal.SIGTERM)
    # the run had saved a step: the server's loss cost it no attempt
    assert final.attempts == 1, (tmp_path / "s2.log").read_text()
    events = await all_events(store, run_id)
    assert_exact_log(events)
    types = [e.type for e in events]
    assert types.count(EventType.RUN_STARTED) == 2
    assert types[-1] == EventType.RUN_CANCELLED
    assert {EventType.RUN_CANCELLING, EventType.RUN_REQUEUED} <= set(types)
