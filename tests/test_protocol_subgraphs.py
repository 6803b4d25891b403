"""The ``lifecycle`` of subgraphs on the thread stream: derived from the durable log, under
each subgraph's namespace, started before its first part and completed with its task's
update in the parent; interrupted and running again around a wait inside it."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any, cast

from outlast.api.protocol.translate import RunTranslator
from outlast.store import Event, Run, Store
from outlast.vocabulary import EventType
from tests.harness import serve
from tests.lg_util import protocol_frames


def _lifecycle(frames: list[dict[str, Any]]) -> list[tuple[tuple[str, ...], str]]:
    return [
        (tuple(n.split(":")[0] for n in f["params"]["namespace"]), f["params"]["data"]["event"])
        for f in frames
        if f["method"] == "lifecycle"
    ]


async def test_a_subgraph_starts_and_completes_inside_its_parent(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_nested", input={}, stream_subgraphs=True)
        await client.runs.join(thread, run["run_id"])
        body = {"channels": ["updates", "lifecycle"], "since": 0}
        frames = await protocol_frames(srv.client, thread, body)
        assert _lifecycle(frames) == [
            ((), "started"),
            ((), "running"),
            (("inner",), "started"),
            (("inner",), "completed"),
            ((), "completed"),
        ]
        names = [
            (f["method"], f["params"]["data"].get("node") or f["params"]["data"]["event"])
            for f in frames
            if f["params"]["namespace"]
        ]
        # started before the subgraph's first update, completed just before its parent's
        assert names == [
            ("lifecycle", "started"),
            ("updates", "inner_a"),
            ("updates", "inner_b"),
            ("lifecycle", "completed"),
        ]
        started = next(f for f in frames if f["params"]["namespace"])
        assert started["params"]["data"]["graph_name"] == "inner"
        # the same parts, ids included, however far into the log a reader starts
        later = await protocol_frames(srv.client, thread, {**body, "since": started["seq"]})
        assert later == [f for f in frames if f["seq"] > started["seq"]]


def _event(seq: int, type_: str, **data: Any) -> Event:
    return Event("r", seq, type_, data, dt.datetime.now(dt.UTC))


def test_a_wait_inside_a_subgraph_interrupts_it_and_the_resume_runs_it_again() -> None:
    translator = RunTranslator(cast(Run, SimpleNamespace(graph="outer", id="r")))
    inner, deeper = "inner:t1", "inner:t1|deep:t2"
    log = [
        _event(1, EventType.RUN_CREATED),
        _event(2, EventType.RUN_STARTED, attempt=1),
        _event(3, EventType.NODE_UPDATED, ns=deeper, node="ask", update={}, task="t3"),
        _event(4, EventType.RUN_WAITING, kinds=["human"]),
        _event(5, EventType.RUN_STARTED, attempt=2),
        _event(6, EventType.CUSTOM, ns=deeper, data={"x": 1}),
        _event(7, EventType.NODE_UPDATED, ns=inner, node="deep", update={}, task="t2"),
        _event(8, EventType.NODE_UPDATED, ns="", node="inner", update={}, task="t1"),
        _event(9, EventType.NODE_UPDATED, ns="", node="other", update={}, task="t9"),
        _event(10, EventType.RUN_COMPLETED),
    ]
    seen = [
        (tuple(p.namespace), p.data["event"])
        for e in log
        for p in translator.parts(e)
        if p.method == "lifecycle"
    ]
    assert seen == [
        ((), "started"),
        ((), "running"),
        (("inner:t1",), "started"),
        (("inner:t1", "deep:t2"), "started"),
        (("inner:t1", "deep:t2"), "interrupted"),
        (("inner:t1",), "interrupted"),
        ((), "interrupted"),
        ((), "running"),
        (("inner:t1",), "running"),
        (("inner:t1", "deep:t2"), "running"),
        (("inner:t1", "deep:t2"), "completed"),
        (("inner:t1",), "completed"),
        ((), "completed"),
    ]


def test_what_a_failed_run_left_open_fails_with_it() -> None:
    translator = RunTranslator(cast(Run, SimpleNamespace(graph="outer", id="r")))
    translator.parts(_event(1, EventType.CUSTOM, ns="inner:t1", data={}))
    failed = translator.parts(_event(2, EventType.RUN_FAILED, error={"type": "Boom"}))
    assert [(p.namespace, p.data["event"], p.data.get("error")) for p in failed] == [
        (["inner:t1"], "failed", "Boom"),
        ([], "failed", "Boom"),
    ]
