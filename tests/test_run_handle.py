"""The run handle (``service/handle.py``): every face finds, settles, answers and cancels a
run through it, so a request means the same through every door.

- No face keeps its own copy of the handle's business (a lookup in the store, a watch of
  the run's status, a cancel beside the handle, a listing outside the run service's
  page); the finder that says so is itself tested on a copy.
- A run that asks two things at once (``lg_multi``: two parallel interrupts) is
  answered through A2A, MCP and ``/v1`` with one rule: an answer that names no wait is
  refused with the same reason on every face, never guessed; one that names its wait
  lands once; a retried answer changes nothing.
- An outage is an outage on every face, never "not found".
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path
from typing import Any, get_args

import httpx
import mcp_types as types
import pytest
from a2a.helpers import new_text_part
from a2a.utils.errors import UnsupportedOperationError
from mcp.shared.exceptions import MCPError

import outlast
from outlast.api.a2a import tasks as a2a_tasks
from outlast.api.mcp import results as mcp_results
from outlast.errors import StoreUnavailable
from outlast.service.standing import TaskStance
from outlast.store import Store
from tests.a2a_client import Agent, message
from tests.harness import Server, make_settings, serve, until_snapshot, wait_result
from tests.mcp_client import connect

API = Path(outlast.__file__).parent / "api"

# Modules that read runs for what is not one run's business: the event streams (a log,
# read from the store under the stream's own clock), the outboxes' deliveries (a
# delivery names its run; no caller to find it for), a thread's latest run read for its
# state (the thread was found for the caller), and a thread's walk (each run's log).
NOT_A_FACE_VERB = {
    "sse.py",
    "a2a/push.py",
    "lg/webhook.py",
    "lg/access.py",
    "thread_walk.py",
}


def copies(source: str) -> list[str]:
    """What in ``source`` does the run handle's business beside it: a run read or listed
    from the store, a watch on a run's status, a cancel not through a handle."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if not isinstance(func, ast.Attribute):
            continue
        owner = ast.unparse(func.value)
        if func.attr in ("get_run", "list_runs") and owner.endswith("store"):
            found.append(f"{owner}.{func.attr}")
        elif func.attr == "cancel" and owner.endswith("runs"):
            found.append(f"{owner}.cancel")
        elif func.attr == "watch" and node.args and ast.unparse(node.args[0]) == "STATUS":
            found.append(f"{owner}.watch(STATUS)")
    return found


def test_no_face_keeps_a_copy_of_the_handle() -> None:
    seen = {}
    for path in sorted(API.rglob("*.py")):
        name = path.relative_to(API).as_posix()
        if name in NOT_A_FACE_VERB:
            continue
        found = copies(path.read_text())
        if found:
            seen[name] = found
    assert seen == {}, "use RunService.handle / page (service/handle.py)"


def test_the_copy_finder_finds_a_copy() -> None:
    face = """
async def lookup(ctx, run_id):
    run = await ctx.store.get_run(run_id)
    runs = await ctx.store.list_runs(principal=None, thread_id=None)
    with ctx.store.hub.watch(STATUS, run_id) as changed:
        await ctx.runs.cancel(run, "why")
    await RunHandle(ctx.runs, run).cancel("why")  # the handle's own: not a copy
"""
    assert copies(face) == [
        "ctx.store.get_run",
        "ctx.store.list_runs",
        "ctx.store.hub.watch(STATUS)",
        "ctx.runs.cancel",
    ]


@pytest.fixture
async def srv(store: Store, tmp_path: Path) -> Any:
    async with serve(store, make_settings(data_dir=tmp_path, result_wait_max=20)) as server:
        yield server


async def _asking_twice(srv: Server) -> dict[str, Any]:
    made = await srv.client.post("/v1/runs", json={"graph": "lg_multi", "input": {}})
    assert made.status_code == 202, made.text

    def two(snap: dict[str, Any]) -> bool:
        return snap["status"] == "waiting" and len(snap.get("waits") or []) == 2

    return await until_snapshot(srv.client, made.json()["id"], two)


async def test_an_answer_that_names_no_wait_is_refused_alike_on_every_face(srv: Server) -> None:
    run = await _asking_twice(srv)
    run_id, waits = run["id"], [w["id"] for w in run["waits"]]
    async with httpx.AsyncClient(timeout=60) as http, connect(srv.url) as peer:
        agent = Agent(http, srv.url)
        followup = message(new_text_part("yes"))
        followup.task_id, followup.context_id = run_id, run["thread_id"]
        with pytest.raises(UnsupportedOperationError) as a2a:
            await agent.send("lg_multi", followup)
        assert "asks 2 things at once" in a2a.value.message
        with pytest.raises(MCPError) as mcp:
            await peer.session.call_tool("outlast_answer", {"run_id": run_id, "answer": "yes"})
        assert mcp.value.code == types.INVALID_PARAMS
        assert "Answer names no wait" in mcp.value.message
        # nothing was answered by either refusal
        still = (await srv.client.get(f"/v1/runs/{run_id}")).json()
        assert still["status"] == "waiting" and len(still["waits"]) == 2

        # one named through MCP (its call then waits for the run: it asks again)
        named = await peer.session.call_tool(
            "outlast_answer", {"run_id": run_id, "answer": "left!", "wait_id": waits[0]}
        )
        assert named.structured_content["status"] == "waiting", named
        # the other is now the one it asks: A2A's follow-up names none, and lands
        last = message(new_text_part("right!"))
        last.task_id, last.context_id = run_id, run["thread_id"]
        await agent.send("lg_multi", last, return_immediately=True)
        # the same follow-up again is recognised: no second answer, no error
        await agent.send("lg_multi", last, return_immediately=True)
        # and /v1 may not answer what was answered
        late = await srv.client.post(
            f"/v1/runs/{run_id}/input", json={"wait_id": waits[1], "value": "late"}
        )
        assert late.status_code == 409, late.text
    done = await wait_result(srv.client, run_id)
    assert done["status"] == "completed", done
    assert sorted(done["result"]["answers"]) == sorted(
        [f"{q}={a}" for q, a in zip(_questions(run), ["left!", "right!"], strict=True)]
    )


def _questions(run: dict[str, Any]) -> list[str]:
    """The two questions, in the order of the run's waits (each wait's prompt)."""
    return [str(w["prompt"]) for w in run["waits"]]


async def test_an_outage_is_never_not_found_on_the_http_faces(
    srv: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = await srv.client.post("/v1/runs", json={"graph": "steps", "input": {}})
    run_id = made.json()["id"]
    thread_id = made.json()["thread_id"]
    await wait_result(srv.client, run_id)

    async def outage(run_id: str) -> None:
        raise StoreUnavailable("the database is restarting")

    monkeypatch.setattr(srv.store, "get_run", outage)
    for method, path in [
        ("GET", f"/v1/runs/{run_id}"),
        ("GET", f"/v1/runs/{run_id}/result?wait=1"),
        ("POST", f"/v1/runs/{run_id}/cancel"),
        ("POST", f"/v1/runs/{run_id}/input"),
        ("GET", f"/threads/{thread_id}/runs/{run_id}"),
        ("POST", f"/threads/{thread_id}/runs/{run_id}/cancel"),
    ]:
        body = {"wait_id": "w", "value": 1} if path.endswith("/input") else None
        got = await srv.client.request(method, path, json=body)
        assert got.status_code == 503, (method, path, got.status_code, got.text)
        assert got.headers.get("retry-after") or "unavailable" in got.text.lower()
    # what does not exist is still not found
    monkeypatch.undo()
    missing = await srv.client.get(f"/v1/runs/{uuid.uuid4()}")
    assert missing.status_code == 404


def test_every_task_stance_has_words_on_both_task_faces() -> None:
    """The one mapping (``service/standing.task_stance``) and each face's words for it:
    a new stance must be said by A2A and MCP alike."""
    stances = set(get_args(TaskStance))
    assert set(a2a_tasks.STATES) == stances
    assert set(mcp_results.STATUSES) == stances
