"""A graph for the supervisor's conversation tests: an agent that keeps retrying the same
failing call, then goes silent inside it (``tests/test_supervisor_conversation.py``)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

CALL: dict[str, Any] = {
    "name": "search_flights",
    "args": {"origin": "LIS", "to": "NRT", "date": "2026-02-30"},
}
ERROR = "error 400: invalid date '2026-02-30'"
TRIES = 3  # answered with the error before the call that goes silent


class Conversation(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    got: Any


def _call(n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{**CALL, "id": f"call-{n}"}])


async def _agent(state: Conversation) -> dict[str, Any]:
    """The same call, the same error, ``TRIES`` times, and the same call once more."""
    said: list[Any] = []
    for n in range(TRIES):
        error = ToolMessage(ERROR, tool_call_id=f"call-{n}", name=CALL["name"], status="error")
        said += [_call(n), error]
    return {"messages": [*said, _call(TRIES)]}


async def _tool(state: Conversation) -> dict[str, Any]:
    """The last call: one sign of life, then silence until a supervisor's message."""
    from outlast.nodes import progress

    if any(getattr(m, "name", None) == "supervisor" for m in state.get("messages", [])):
        return {"got": "tried another approach"}
    progress(f"calling {CALL['name']}")
    while True:  # silent, without a sign of life
        await asyncio.sleep(0.05)


def _build_retrying() -> Any:
    b = StateGraph(Conversation)
    b.add_node("agent", _agent)
    b.add_node("tools", _tool)
    b.add_edge(START, "agent")
    b.add_edge("agent", "tools")
    b.add_edge("tools", END)
    return b.compile()


retrying = _build_retrying()
