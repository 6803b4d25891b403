"""``steps``: a small example graph of several steps, with no model and no tools.

It accepts the LangGraph messages convention (``{"messages": [{"role": "user", ...}]}``)
and walks five steps, emitting a custom progress event in each. ``configurable.step_delay``
(seconds) slows each step so a person can watch a run, disconnect and come back.
Deterministic: a run resumed from a checkpoint produces the same result.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict  # pydantic (LangGraph Studio) needs it on 3.11

STEPS = ("plan", "gather", "draft", "review", "finish")


class StepsState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    async def node(state: StepsState, config: RunnableConfig) -> dict[str, Any]:
        writer = get_stream_writer()
        writer({"step": name, "index": STEPS.index(name) + 1, "of": len(STEPS)})
        delay = float(config.get("configurable", {}).get("step_delay", 0) or 0)
        if delay > 0:
            await asyncio.sleep(delay)
        update: dict[str, Any] = {"steps": [name]}
        if name == STEPS[-1]:
            asked = next(
                (m.content for m in reversed(state.get("messages", [])) if m.type == "human"),
                "(nothing)",
            )
            done = " → ".join([*state.get("steps", []), name])
            update["messages"] = [AIMessage(content=f"Worked on {asked!r}: {done}.")]
        return update

    node.__name__ = name
    return node


def build() -> StateGraph[StepsState]:
    builder = StateGraph(StepsState)
    previous = START
    for name in STEPS:
        builder.add_node(name, _step(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


graph = build().compile()
