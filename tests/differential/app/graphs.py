"""The differential app's graphs, written the way LangGraph's documentation teaches them:
no network, fake chat models (``GenericFakeChatModel``) that stream their reply word by
word, an ``interrupt()`` round trip with ``Command``, a subgraph, a tool-calling agent, a
node that returns a message without calling a model, a failing node, a slow one, custom
stream writes and the item store through the runtime.

Every model is built per call from the conversation so far, so a reply depends on its
input only (the same on every server, run after run).
"""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt


def _last_text(messages: list[BaseMessage]) -> str:
    return str(messages[-1].content) if messages else ""


class TellsHowCalled(GenericFakeChatModel):
    """A fake model that says how it was called: invoked plainly (``_generate``: its
    reply ends with ``(invoked)``) or streamed (``_stream``, what a server does when a
    client streams the model's tokens: its reply comes word by word, as it is)."""

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return super()._stream(messages, stop, run_manager, streamed=True, **kw)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        streamed = kw.pop("streamed", False)
        result: ChatResult = super()._generate(messages, stop, run_manager, **kw)
        if streamed:
            return result
        text = f"{result.generations[0].message.content} (invoked)"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class ToolCallingFake(BaseChatModel):
    """A fake model whose reply may call tools, streamed as one chunk (tool call chunks
    included) or invoked whole."""

    reply: AIMessage

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self.reply)])

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        calls = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(self.reply.tool_calls)
        ]
        chunk = AIMessageChunk(
            content=self.reply.content, tool_call_chunks=calls, chunk_position="last"
        )
        yield ChatGenerationChunk(message=chunk)


# -- chat: one model call -----------------------------------------------------------------


def _chat_model(fake: type[GenericFakeChatModel]) -> Any:
    async def model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        reply = AIMessage(content=f"echo {_last_text(state['messages'])}")
        return {"messages": [await fake(messages=iter([reply])).ainvoke(state["messages"], config)]}

    return model


def _one_model(fake: type[GenericFakeChatModel]) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("model", _chat_model(fake))
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return graph.compile()


chat = _one_model(GenericFakeChatModel)
tells = _one_model(TellsHowCalled)  # says whether its model was streamed


# -- canned: a node returns a message, no model call (a router's canned answer) ---------


async def _canned(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="a canned answer", id="canned-1")]}


_canned_graph = StateGraph(MessagesState)
_canned_graph.add_node("canned", _canned)
_canned_graph.add_edge(START, "canned")
_canned_graph.add_edge("canned", END)
canned = _canned_graph.compile()


# -- agent: a tool-calling loop (the ReAct pattern of the docs) -----------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It is always sunny in {city}."


TOOLS = [get_weather]


async def _agent_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        reply = AIMessage(content=f"The tool said: {last.content}")
    else:
        city = _last_text(state["messages"]).split()[-1]
        reply = AIMessage(
            content="",
            tool_calls=[{"name": "get_weather", "args": {"city": city}, "id": "call-1"}],
        )
    model = ToolCallingFake(reply=reply)
    return {"messages": [await model.ainvoke(state["messages"], config)]}


_agent = StateGraph(MessagesState)
_agent.add_node("model", _agent_model)
_agent.add_node("tools", ToolNode(TOOLS))
_agent.add_edge(START, "model")
_agent.add_conditional_edges("model", tools_condition)
_agent.add_edge("tools", "model")
agent = _agent.compile()


# -- hitl: interrupt() and Command (the human-in-the-loop how-to) --------------------------


class Review(TypedDict, total=False):
    topic: str
    draft: str
    verdict: Any
    done: str


async def _draft(state: Review) -> dict[str, Any]:
    return {"draft": f"a draft about {state.get('topic', 'nothing')}"}


async def _review(state: Review) -> Command[Literal["publish", "redo"]]:
    verdict = interrupt({"question": "Publish this draft?", "draft": state.get("draft")})
    if verdict == "no":
        return Command(goto="redo", update={"verdict": verdict})
    return Command(goto="publish", update={"verdict": verdict})


async def _publish(state: Review) -> dict[str, Any]:
    return {"done": f"published ({state.get('verdict')!r})"}


async def _redo(state: Review) -> dict[str, Any]:
    return {"done": "sent back"}


_hitl = StateGraph(Review)
_hitl.add_node("draft", _draft)
_hitl.add_node("review", _review)
_hitl.add_node("publish", _publish)
_hitl.add_node("redo", _redo)
_hitl.add_edge(START, "draft")
_hitl.add_edge("draft", "review")
_hitl.add_edge("publish", END)
_hitl.add_edge("redo", END)
hitl = _hitl.compile()


# -- nested: a subgraph as a node ------------------------------------------------------------


class Trail(TypedDict, total=False):
    trail: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    async def node(state: Trail) -> dict[str, Any]:
        return {"trail": [name]}

    return node


_inner = StateGraph(Trail)
_inner.add_node("inner_a", _step("inner_a"))
_inner.add_node("inner_b", _step("inner_b"))
_inner.add_edge(START, "inner_a")
_inner.add_edge("inner_a", "inner_b")
_inner.add_edge("inner_b", END)

_nested = StateGraph(Trail)
_nested.add_node("first", _step("first"))
_nested.add_node("inner", _inner.compile())
_nested.add_node("last", _step("last"))
_nested.add_edge(START, "first")
_nested.add_edge("first", "inner")
_nested.add_edge("inner", "last")
_nested.add_edge("last", END)
nested = _nested.compile()


# -- writer: custom stream writes --------------------------------------------------------------


async def _writer(state: Trail) -> dict[str, Any]:
    write = get_stream_writer()
    for i in range(3):
        write({"progress": i})
    return {"trail": ["written"]}


_writer_graph = StateGraph(Trail)
_writer_graph.add_node("work", _writer)
_writer_graph.add_edge(START, "work")
_writer_graph.add_edge("work", END)
writer = _writer_graph.compile()


# -- fails: a node raises ----------------------------------------------------------------------


async def _explode(state: Trail) -> dict[str, Any]:
    raise ValueError("kaboom")


_fails = StateGraph(Trail)
_fails.add_node("explode", _explode)
_fails.add_edge(START, "explode")
_fails.add_edge("explode", END)
fails = _fails.compile()


# -- slow: a node that takes its time (cancels, multitasking, a run still pending) ------------


async def _nap(state: Trail, config: RunnableConfig) -> dict[str, Any]:
    await asyncio.sleep(float(config.get("configurable", {}).get("delay", 1.0)))
    return {"trail": ["napped"]}


_slow = StateGraph(Trail)
_slow.add_node("nap", _nap)
_slow.add_edge(START, "nap")
_slow.add_edge("nap", END)
slow = _slow.compile()


# -- memory: the item store through the runtime -----------------------------------------------


async def _remember(state: Trail, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    namespace = ("memories", "graph")
    await runtime.store.aput(namespace, "last", {"trail": list(state.get("trail") or [])})
    found = await runtime.store.aget(namespace, "last")
    return {"trail": [f"remembered {found.value if found else None}"]}


_memory = StateGraph(Trail)
_memory.add_node("remember", _remember)
_memory.add_edge(START, "remember")
_memory.add_edge("remember", END)
memory = _memory.compile()
