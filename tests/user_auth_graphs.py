"""Graphs for tests/test_user_auth.py: a factory that records the user it is built for,
and whose run says whom its config names."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph_sdk.runtime import ServerRuntime

SEEN: list[tuple[str, str]] = []  # (access context, the runtime's user)


class WhoState(TypedDict, total=False):
    topic: str
    who: str
    permissions: list[str]


async def _who(state: WhoState, config: RunnableConfig) -> dict[str, Any]:
    configurable = config["configurable"]
    return {
        "who": configurable["langgraph_auth_user_id"],
        "permissions": configurable["langgraph_auth_permissions"],
    }


def whoami(config: RunnableConfig, runtime: ServerRuntime[Any]) -> Any:
    SEEN.append((runtime.access_context, runtime.ensure_user().identity))
    b = StateGraph(WhoState)
    b.add_node("who", _who)
    b.add_edge(START, "who")
    b.add_edge("who", END)
    return b.compile()
