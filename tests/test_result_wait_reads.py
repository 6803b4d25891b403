"""``result?wait`` reads the run once, inside its watch, and again only at a status
change: the read that finds the caller's run is the one the wait starts from."""

from __future__ import annotations

from collections import Counter

from outlast.store import Store
from tests.harness import post_run, serve, wait_status


async def test_a_wait_that_sees_no_change_reads_the_run_once(
    store: Store, statements: Counter[str]
) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks", input={})
        await wait_status(srv.client, run["id"], "waiting")  # nothing changes from here
        before = statements["get_run"]
        response = await srv.client.get(f"/v1/runs/{run['id']}/result", params={"wait": 0.2})
        assert response.status_code == 202 and response.json()["status"] == "waiting"
        assert statements["get_run"] - before == 1


async def test_a_wait_for_a_run_of_another_principal_or_none_is_404(store: Store) -> None:
    async with serve(store) as srv:
        for run_id in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
            response = await srv.client.get(f"/v1/runs/{run_id}/result", params={"wait": 5})
            assert response.status_code == 404, response.text
