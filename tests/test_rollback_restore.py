"""``restore_as_head``: a rollback puts back the checkpoint from before a run with its
pending writes, and they still apply there. A run cancelled between a task's saved writes
and its step's checkpoint leaves such a checkpoint; the copy that becomes the head has a
new id, and with it new task ids, so the writes must follow their tasks (the LangGraph
rollback test lost them under load: a thread rolled back one step too far)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from outlast.runtime.options import restore_as_head


class State(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def _graph(saver: InMemorySaver) -> Any:
    async def ok(state: State) -> dict[str, Any]:
        return {"done": ["ok"]}

    async def boom(state: State) -> dict[str, Any]:
        raise RuntimeError("boom")

    builder = StateGraph(State)
    builder.add_node("ok", ok)
    builder.add_node("boom", boom)
    builder.add_edge(START, "ok")
    builder.add_edge(START, "boom")
    return builder.compile(checkpointer=saver)


async def test_pending_writes_apply_to_the_restored_head() -> None:
    saver = InMemorySaver()
    graph = _graph(saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="boom"):
        await graph.ainvoke({"done": []}, config)
    # the step's checkpoint holds `ok`'s write as a pending write; boom failed
    stopped = await graph.aget_state(config)
    assert stopped.values == {"done": ["ok"]} and stopped.next == ("boom",)
    source = stopped.config["configurable"]["checkpoint_id"]
    await restore_as_head(graph, saver, "t", source)
    restored = await graph.aget_state(config)
    assert restored.config["configurable"]["checkpoint_id"] != source  # a copy, the head
    assert restored.values == {"done": ["ok"]}  # the write still applies
    assert restored.next == ("boom",)  # ok is done; only boom is left to run
