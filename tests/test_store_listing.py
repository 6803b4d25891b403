"""A listing reads its page in a fixed number of queries, whatever the page size.

``GET /v1/runs`` shows what each waiting run waits for. Reading the waits run by run
(one query each) made a page of 200 waiting runs 201 queries, and on SQLite 200 passes
through the file's only write lock. The store counts nothing itself: the test counts the
named statements the shared code sends through each backend's ``Tx``.
"""

from __future__ import annotations

from collections import Counter

from outlast.store import Lease, RunStatus, Store, WaitSpec
from outlast.vocabulary import WaitKind
from tests.harness import serve
from tests.util import new_run


async def _park(store: Store, n: int) -> dict[str, str]:
    """``n`` runs waiting on one human wait each: run id → wait id."""
    for _ in range(n):
        await store.create_run(new_run())
    parked: dict[str, str] = {}
    for run in await store.claim("w", 30, n):
        lease = Lease(run.id, "w", run.lease_epoch)
        spec = WaitSpec(interrupt_id="i", kind=WaitKind.HUMAN, prompt="ok?")
        assert await store.park(lease, [spec], lookback=0) == RunStatus.WAITING
        (wait,) = await store.list_waits(run.id)
        parked[run.id] = wait.id
    assert len(parked) == n
    return parked


async def test_a_page_of_waiting_runs_costs_the_same_queries_at_any_size(
    store: Store, statements: Counter[str]
) -> None:
    async with serve(store, with_worker=False) as srv:
        sent: list[int] = []
        parked: dict[str, str] = {}
        for more in (3, 37):
            parked |= await _park(store, more)
            statements.clear()
            page = await srv.client.get(
                "/v1/runs", params={"status": "waiting", "limit": len(parked)}
            )
            assert page.status_code == 200, page.text
            sent.append(sum(statements.values()))
            listed = {r["id"]: r["wait"]["id"] for r in page.json()["runs"]}
            assert listed == parked  # every run, with its own wait
        assert sent[0] == sent[1], dict(statements)


async def test_open_waits_of_many_runs_in_one_query(store: Store, statements: Counter[str]) -> None:
    parked = await _park(store, 5)
    idle, _ = await store.create_run(new_run())
    statements.clear()
    found = await store.open_waits([*parked, idle.id])
    assert {run_id: [w.id for w in waits] for run_id, waits in found.items()} == {
        run_id: [wait_id] for run_id, wait_id in parked.items()
    }
    assert sum(statements.values()) == 1
    assert await store.open_waits([]) == {}
