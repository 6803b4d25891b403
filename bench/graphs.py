"""The benchmark graphs, listed in bench/langgraph.json (outlast and ``langgraph dev`` alike).

- ``ten``      ten trivial nodes in a line, each appending its name to a list: the cost of
               the runtime itself, since the nodes do nothing (overhead, throughput, storage).
- ``parked``   asks a person (``wait_for_human``), then finishes: a run that waits holds
               no worker, so 10,000 of them should cost a worker nothing (parked).
- ``emitter``  waits for a "go" (so stream clients attach before anything is emitted),
               then emits ``configurable.count`` custom events, ``configurable.interval``
               seconds apart, each carrying the wall-clock time it was emitted (stream).
- ``slow``     one node that sleeps ``configurable.step_delay`` seconds: a run that is
               surely still running when its worker is killed (recovery).
- ``ticker``   one node that emits ``configurable.count`` custom events, the first at once
               and then ``configurable.interval`` seconds apart, each carrying its index,
               the wall-clock time it was emitted and ``configurable.tag``; no wait
               first, so it runs alike on ``langgraph dev`` (protocol).
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.stream.transformers import CustomTransformer
from typing_extensions import TypedDict  # pydantic (the dev server) needs it on 3.11

from outlast.nodes import wait_for_human

NODES = tuple(f"n{i}" for i in range(10))


class TenState(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def _node(name: str) -> Any:
    async def node(state: TenState) -> dict[str, Any]:
        return {"steps": [name]}

    node.__name__ = name
    return node


def build() -> StateGraph[TenState]:
    builder: StateGraph[TenState] = StateGraph(TenState)
    previous = START
    for name in NODES:
        builder.add_node(name, _node(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


ten = build().compile()


class AskState(TypedDict, total=False):
    answer: str
    done: bool


async def _ask(state: AskState) -> dict[str, Any]:
    return {"answer": wait_for_human("Go on?", {"type": "string"})}


async def _finish(state: AskState) -> dict[str, Any]:
    return {"done": True}


def _line(state: type[Any], *nodes: tuple[str, Any]) -> Any:
    builder: StateGraph[Any] = StateGraph(state)
    previous = START
    for name, fn in nodes:
        builder.add_node(name, fn)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile()


parked = _line(AskState, ("ask", _ask), ("finish", _finish))


class EmitState(TypedDict, total=False):
    go: str
    emitted: int


async def _gate(state: EmitState) -> dict[str, Any]:
    return {"go": wait_for_human("Start emitting?", {"type": "string"})}


async def _emit(state: EmitState, config: RunnableConfig) -> dict[str, Any]:
    options = config.get("configurable", {})
    count = int(options.get("count", 100))
    interval = float(options.get("interval", 0.05))
    writer = get_stream_writer()
    for i in range(count):
        writer({"i": i, "t": time.time()})  # wall clock: the client compares on the same host
        if interval > 0:
            await asyncio.sleep(interval)
    return {"emitted": count}


emitter = _line(EmitState, ("gate", _gate), ("emit", _emit))


class SlowState(TypedDict, total=False):
    slept: float


async def _sleep(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
    delay = float(config.get("configurable", {}).get("step_delay", 30.0))
    await asyncio.sleep(delay)
    return {"slept": delay}


slow = _line(SlowState, ("sleep", _sleep))


class TickState(TypedDict, total=False):
    ticks: int


async def _tick(state: TickState, config: RunnableConfig) -> dict[str, Any]:
    options = config.get("configurable", {})
    count = int(options.get("count", 20))
    interval = float(options.get("interval", 0.05))
    writer = get_stream_writer()
    for i in range(count):
        if i and interval > 0:
            await asyncio.sleep(interval)
        # the first at once: the run's first output; ``tag`` tells one run's from another's
        writer({"i": i, "t": time.time(), "tag": options.get("tag")})
    return {"ticks": count}


# LangGraph's own server streams protocol v2 runs through ``astream_events(version="v3")``,
# which asks the graph only for the stream modes its transformers need: without the custom
# transformer the dev server would never see a ``writer(...)`` call. outlast ignores it.
ticker = (
    StateGraph(TickState)
    .add_node("tick", _tick)
    .add_edge(START, "tick")
    .add_edge("tick", END)
    .compile(transformers=[CustomTransformer])
)
