"""With an app's ``auth.py``, its handlers are the authority, as on LangGraph's server
(service/owners.py): what they admit is shared, whoever made it; what they filter out
does not exist. Two patterns LangGraph's tutorials teach, through the real
``langgraph_sdk``: an organisation's users read and continue each other's threads, and an
admin reads every user's store namespace (``tests/user_auth_org_app.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError

from outlast.config import Settings
from outlast.store import Store
from tests.harness import make_settings, serve
from tests.user_auth_support import TESTS

ADA = {"Authorization": "Bearer token-ada"}
BEN = {"Authorization": "Bearer token-ben"}
EVE = {"Authorization": "Bearer token-eve"}
ROOT = {"Authorization": "Bearer token-root"}


def org_settings(tmp_path: Path) -> Settings:
    path = tmp_path / "langgraph.json"
    graphs = {"hitl": f"{TESTS}/lg_graphs.py:hitl", "memory": f"{TESTS}/lg_graphs.py:memory"}
    auth = {"path": f"{TESTS}/user_auth_org_app.py:auth"}
    path.write_text(json.dumps({"graphs": graphs, "auth": auth}))
    return make_settings(graphs_file=path, result_wait_max=20)


async def test_an_organisations_users_share_their_threads(store: Store, tmp_path: Path) -> None:
    async with serve(store, org_settings(tmp_path)) as srv:
        ada, ben, eve = srv.sdk(headers=ADA), srv.sdk(headers=BEN), srv.sdk(headers=EVE)
        thread = await ada.threads.create()
        tid = thread["thread_id"]
        assert thread["metadata"]["org"] == "acme"
        asked = await ada.runs.wait(tid, "hitl", input={"topic": "launch"})
        assert "__interrupt__" in asked
        # ben, of the same organisation, finds it, reads it and its runs, and answers it
        assert [t["thread_id"] for t in await ben.threads.search()] == [tid]
        assert (await ben.threads.get_state(tid))["values"]["topic"] == "launch"
        (run,) = await ben.runs.list(tid)
        assert (await ben.runs.get(tid, run["run_id"]))["run_id"] == run["run_id"]
        done = await ben.runs.wait(tid, "hitl", command={"resume": "ben says yes"})
        assert done["done"] == "acted on 'ben says yes'"
        assert len(await ada.runs.list(tid)) == 2
        # eve, of another, finds nothing and changes nothing
        assert await eve.threads.search() == []
        for call in (
            eve.threads.get(tid),
            eve.threads.get_state(tid),
            eve.runs.get(tid, run["run_id"]),
            eve.runs.wait(tid, "hitl", input={"topic": "mine now"}),
            eve.threads.update(tid, metadata={"org": "other"}),
        ):
            # runs.wait reads its answer as a stream: httpx's error, not the SDK's
            with pytest.raises((NotFoundError, httpx.HTTPStatusError)) as refused:
                await call
            assert refused.value.response.status_code == 404
        assert len(await ada.runs.list(tid)) == 2
        assert (await ada.threads.get(tid))["metadata"]["org"] == "acme"


async def test_an_admin_reads_every_users_namespace(store: Store, tmp_path: Path) -> None:
    async with serve(store, org_settings(tmp_path)) as srv:
        ada, ben, root = srv.sdk(headers=ADA), srv.sdk(headers=BEN), srv.sdk(headers=ROOT)
        await ada.store.put_item(("ada", "notes"), "n1", {"text": "ada's"})
        await ben.store.put_item(("ben", "notes"), "n1", {"text": "ben's"})
        for user in ("ada", "ben"):
            item = await root.store.get_item((user, "notes"), "n1")
            assert item is not None and item["value"] == {"text": f"{user}'s"}
        found = await root.store.search_items(("ada",))
        assert [i["value"]["text"] for i in found["items"]] == ["ada's"]
        # what a run's graph stores is in the same one tree, as on LangGraph's server
        thread = await ada.threads.create()
        await ada.runs.wait(thread["thread_id"], "memory", input={"note": "from-a-run"})
        stored = await root.store.get_item(("notes",), "from-a-run")
        assert stored is not None and stored["value"] == {"text": "from-a-run"}
        # a user keeps to their own: the handler's assertion refuses the rest
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await ben.store.get_item(("ada", "notes"), "n1")
        assert refused.value.response.status_code == 403
        assert refused.value.response.json() == {"detail": "Not authorized"}
