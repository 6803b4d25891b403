"""LangGraph Studio, emulated: Studio is a hosted page that cannot run offline, so this
replays the calls it is reported to make (``langgraph-api-compat.md`` §A.9), with its
quirks: JSON posted as ``text/plain``, a CORS preflight from its origin with Chrome's
private network access, ``metadata`` first on a stream, checkpoint ids in ``debug``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from outlast.client.sse import Frames
from outlast.store import Store
from tests.harness import serve

STUDIO = "https://smith.langchain.com"
PLAIN = {"Content-Type": "text/plain;charset=UTF-8", "Origin": STUDIO}


async def _post(client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    """What a browser's "simple" request looks like: no preflight, text/plain."""
    return await client.post(path, content=json.dumps(body), headers=PLAIN)


def _sse(text: str) -> list[tuple[str, str | None, Any]]:
    reader = Frames()
    sent = [reader.feed(line) for line in [*text.splitlines(), ""]]
    return [(f.event, f.id, json.loads(f.data)) for f in sent if f and f.data is not None]


async def test_studio_call_sequence(store: Store) -> None:
    async with serve(store) as srv:
        c = srv.client
        preflight = await c.options(
            "/assistants/search",
            headers={
                "Origin": STUDIO,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-api-key",
                "Access-Control-Request-Private-Network": "true",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-private-network"] == "true"
        assert preflight.headers["access-control-allow-origin"] in ("*", STUDIO)
        info = await c.get("/info", headers={"Origin": STUDIO})
        assert info.status_code == 200 and info.json()["flags"]["assistants"] is True
        exposed = info.headers["access-control-expose-headers"].lower()
        assert "location" in exposed.split(", ") and "content-location" in exposed

        studio_search = {"limit": 10, "offset": 0, "metadata": {"created_by": "system"}}
        found = await _post(c, "/assistants/search", studio_search)
        assert found.status_code == 200
        nested = next(a for a in found.json() if a["graph_id"] == "lg_nested")
        aid = nested["assistant_id"]
        schemas = (await c.get(f"/assistants/{aid}/schemas")).json()
        assert schemas["state_schema"] and schemas["input_schema"]
        graph = (await c.get(f"/assistants/{aid}/graph", params={"xray": "true"})).json()
        assert any(n["id"] == "inner:inner_a" for n in graph["nodes"])
        assert "inner" in (await c.get(f"/assistants/{aid}/subgraphs")).json()

        thread = (await _post(c, "/threads", {"metadata": {}})).json()["thread_id"]
        streamed = await c.post(
            f"/threads/{thread}/runs/stream",
            content=json.dumps(
                {
                    "assistant_id": aid,
                    "input": {"trail": []},
                    "stream_mode": ["debug", "messages-tuple", "values"],
                    "stream_subgraphs": True,
                }
            ),
            headers=PLAIN,
        )
        assert streamed.status_code == 200
        assert streamed.headers["content-location"].startswith(f"/threads/{thread}/runs/")
        assert streamed.headers["location"].endswith("/stream")
        events = _sse(streamed.text)
        assert events[0][0] == "metadata" and events[-1][0] == "end"
        debug = [d for n, _, d in events if n == "debug" and d["type"] == "checkpoint"]
        assert debug and all(d["payload"]["checkpoint"]["checkpoint_id"] for d in debug)
        assert any(n.startswith("values|inner:") for n, _, _ in events)
        assert all(i is not None for _, i, _ in events), "every event has an id"

        history = (await _post(c, f"/threads/{thread}/history", {"limit": 10})).json()
        head, older = history[0], history[2]
        cid = older["checkpoint"]["checkpoint_id"]
        at = (await c.get(f"/threads/{thread}/state/{cid}")).json()
        assert at["checkpoint"]["checkpoint_id"] == cid
        at_ref = {"checkpoint": older["checkpoint"]}
        same = (await _post(c, f"/threads/{thread}/state/checkpoint", at_ref)).json()
        assert same["values"] == at["values"]

        # edit the state as a node, and "re-run from here" (__copy__)
        edited = await _post(
            c, f"/threads/{thread}/state", {"values": {"trail": ["edited"]}, "as_node": "last"}
        )
        assert edited.status_code == 200 and edited.json()["checkpoint"]["checkpoint_id"]
        state = (await c.get(f"/threads/{thread}/state")).json()
        assert state["values"]["trail"][-1] == "edited"
        copied = await _post(c, f"/threads/{thread}/state", {"values": None, "as_node": "__copy__"})
        assert copied.json()["checkpoint_id"] != head["checkpoint"]["checkpoint_id"]

        namespaces = await _post(c, "/store/namespaces", {"limit": 100, "offset": 0})
        assert namespaces.status_code == 200 and namespaces.json() == {"namespaces": []}


async def test_run_as_node_then_a_null_input_run_does_what_langgraph_does(store: Store) -> None:
    """langgraph-studio#218: Studio's "run as node" is an update as a node, then a run
    with ``input: null``. Through outlast it must end where LangGraph itself ends (same
    state, same ``next``), breakpoints included: checked against the same graph run
    in-process on LangGraph's in-memory saver."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.lg_graphs import nested

    local = nested.copy(update={"checkpointer": InMemorySaver()})
    config: Any = {"configurable": {"thread_id": "oracle"}}
    steps: list[tuple[str, Any]] = [
        ("run", {"input": {"trail": []}, "interrupt_before": ["inner"]}),
        ("update", {"values": {"trail": ["by hand"]}, "as_node": "first"}),
        ("run", {"input": None, "interrupt_after": ["inner"]}),
        ("update", {"values": {"trail": ["again"]}, "as_node": "inner"}),
        ("run", {"input": None}),
    ]
    async with serve(store) as srv:
        c = srv.client
        thread = (await c.post("/threads", json={})).json()["thread_id"]
        for kind, args in steps:
            if kind == "run":
                options = {k: v for k, v in args.items() if k != "input"}
                expected = await local.ainvoke(args["input"], config, **options)
                got = await c.post(
                    f"/threads/{thread}/runs/wait", json={"assistant_id": "lg_nested", **args}
                )
                assert got.json() == expected, (args, got.text)
            else:
                await local.aupdate_state(config, args["values"], as_node=args["as_node"])
                await c.post(f"/threads/{thread}/state", json=args)
            ours = (await c.get(f"/threads/{thread}/state")).json()
            theirs = await local.aget_state(config)
            assert ours["next"] == list(theirs.next), (kind, args)
            assert ours["values"] == theirs.values
            paused = bool(theirs.next)
            status = (await c.get(f"/threads/{thread}")).json()["status"]
            assert status == ("interrupted" if paused else "idle"), (kind, args, status)
