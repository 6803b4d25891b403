"""The reference agent: a tool-calling loop that shows every part of outlast at once.

``model ⇄ tools`` over the LangGraph messages convention, built with
:func:`outlast.graph.kit.add_agent_loop`: offline tools that do real work on a folder
(search, read, compute, write a report), the waiting tools (a person, a provider job, a
timer, an outside event) and one declared effect (``send_email`` into a local outbox).
The model is chosen per run (``OUTLAST_MODEL`` / ``configurable.model``); offline it is
the deterministic scripted model, so a run resumed from a checkpoint takes the same path.

``graph`` is what ``langgraph.json`` names: compiled once, without a checkpointer,
because outlast supplies its own per run and the LangGraph dev server (LangGraph Studio)
supplies its own too. (Named as the factory ``make_graph``, it would be built for every
run, and the server could not check its model when it accepts the run.)
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import MessagesState, StateGraph
from langgraph.pregel import Pregel

from outlast.graph.kit import add_agent_loop
from outlast.graph.models import mark_uses_model
from outlast.graph.tools import TOOLS

SYSTEM = (
    "You are a careful operations assistant. Use the tools to look at the workspace, "
    "compute, ask a person when a decision is theirs, write reports and send email. "
    "Messages named 'supervisor' come from the runtime that watches you: follow them."
)


def build() -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    return add_agent_loop(builder, tools=TOOLS, system=SYSTEM)


def make_graph(config: RunnableConfig | None = None) -> Pregel[Any, Any, Any, Any]:
    """The compiled agent (the model itself is picked per run, from the run's config)."""
    return mark_uses_model(build().compile(name="agent"))


graph = make_graph()
