"""Give a user's own ``StateGraph`` a durable tool loop: waits, leases and supervision.

``add_agent_loop(builder, tools=...)`` adds two nodes to any graph with a ``messages``
channel: ``model`` (the chat model, chosen per run by :mod:`outlast.graph.models`, with
the tools bound) and ``tools`` (a LangGraph ``ToolNode``), looping until the model stops
asking for tools. What outlast adds, without the graph knowing about the runtime:

- **waits**: pass ``waits=True`` and the model gets the waiting tools (``ask_human``,
  ``wait_for_job``, ``sleep_until``, ``wait_for_event``); each parks the run, which then
  holds no worker until the answer, the job, the timer or the signal arrives;
- **leases**: every tool call says when it starts and ends (heartbeats on LangGraph's
  custom stream), and streamed model tokens renew the model's lease, so a quiet tool is
  told apart from a stuck one;
- **supervision**: the loop runs on a ``messages`` channel, where the supervisor's
  reminders land (a message named ``supervisor``) for the model to read on its next turn;
  the runtime's budget checkpoint sits at each step boundary, so it is reached before
  every model call;
- tool errors the tool raises on purpose (:class:`ToolRefused`) go back to the model as
  a tool message instead of failing the run.

Under plain LangGraph (LangGraph Studio, a notebook) the same graph runs unchanged; waits
are ordinary interrupts resumed with ``Command(resume=...)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from outlast.graph.models import chat_model, model_name
from outlast.graph.tools import WAIT_TOOLS, ToolRefused
from outlast.nodes import heartbeat, progress

ModelFactory = Callable[[RunnableConfig], BaseChatModel]


def configured_model(config: RunnableConfig) -> BaseChatModel:
    """The run's model: ``configurable.model`` (written at acceptance), else
    ``OUTLAST_MODEL``, else the scripted model (``configurable.model_delay`` slows its
    streaming so a person can watch)."""
    conf = config.get("configurable", {})
    return chat_model(model_name(conf), delay=float(conf.get("model_delay", 0) or 0))


async def _leased_call(
    request: ToolCallRequest,
    execute: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
) -> ToolMessage | Command[Any]:
    name = request.tool_call["name"]
    heartbeat(f"tool {name} started")
    result = await execute(request)
    progress(f"tool {name} done")
    return result


def tool_node(tools: Sequence[BaseTool], *, name: str = "tools") -> ToolNode:
    """A ``ToolNode`` whose calls renew the activity lease and whose refusals go back to
    the model. Interrupts (waits) and other errors propagate as LangGraph intends."""
    return ToolNode(
        list(tools), name=name, handle_tool_errors=(ToolRefused,), awrap_tool_call=_leased_call
    )


def _route(tools_node: str, exit: str) -> Callable[[dict[str, Any]], str]:
    def route(state: dict[str, Any]) -> str:
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        return tools_node if isinstance(last, AIMessage) and last.tool_calls else exit

    return route


def add_agent_loop(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    tools: Sequence[BaseTool],
    model: BaseChatModel | ModelFactory | None = None,
    system: str | None = None,
    waits: bool = False,
    entry: str = START,
    exit: str = END,
    model_node: str = "model",
    tools_node: str = "tools",
) -> StateGraph[Any, Any, Any, Any]:
    """Add the ``model ⇄ tools`` loop to ``builder`` between ``entry`` and ``exit``."""
    all_tools = [*tools, *(t for t in WAIT_TOOLS if waits and t not in tools)]

    def resolve(config: RunnableConfig) -> BaseChatModel:
        if model is None:
            return configured_model(config)
        return model if isinstance(model, BaseChatModel) else model(config)

    async def call_model(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        llm = resolve(config).bind_tools(all_tools)
        messages = list(state.get("messages") or [])
        if system:
            messages = [SystemMessage(content=system), *messages]
        reply = await llm.ainvoke(messages, config)
        return {"messages": [reply]}

    builder.add_node(model_node, call_model)
    builder.add_node(tools_node, tool_node(all_tools, name=tools_node))
    builder.add_edge(entry, model_node)
    builder.add_conditional_edges(model_node, _route(tools_node, exit), [tools_node, exit])
    builder.add_edge(tools_node, model_node)
    return builder
