"""Benchmark graph: ten trivial nodes in a line, each appending its name to a list."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

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
