"""Graphs for the LangGraph face's tests: no model, no network.

- ``chat``: a messages graph whose model (``GenericFakeChatModel``) streams its reply in
  word chunks; ``configurable.delay`` slows each chunk so a test can cut a stream mid-run.
- ``hitl``: think → ``interrupt()`` → act: the human-in-the-loop round trip.
- ``nested``: a subgraph ``inner`` (two nodes) between two nodes, for ``mode|ns`` events,
  ``xray`` and subgraph schemas.
- ``multi``: two parallel interrupts in one step (a resume map by interrupt id).
- ``slow``: ``configurable.steps`` steps of ``configurable.delay`` seconds each.
- ``fail``: raises ``ValueError("kaboom")``.
- ``gated``: ``chat`` whose model streams chunk k+1 only once the file ``go-<k>`` exists in
  the folder ``configurable.gate``: a test opens the gate after its client saw chunk k.
  ``made-<k>`` appears there once chunk k was handed on.
"""

from __future__ import annotations

import asyncio
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt


class _SlowChunks(GenericFakeChatModel):
    delay: float = 0.0

    async def _astream(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        async for chunk in super()._astream(*args, **kwargs):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield chunk


async def _model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable", {})
    last = state["messages"][-1].content if state["messages"] else ""
    words = int(configurable.get("words", 6))
    text = " ".join([f"echo({last})"] + [f"w{i}" for i in range(words)])
    model = _SlowChunks(
        messages=iter([AIMessage(content=text)]), delay=float(configurable.get("delay", 0))
    )
    reply = await model.ainvoke(state["messages"], config)
    return {"messages": [reply]}


def _build_chat() -> Any:
    b = StateGraph(MessagesState)
    b.add_node("model", _model)
    b.add_edge(START, "model")
    b.add_edge("model", END)
    return b.compile()


chat = _build_chat()


class HitlState(TypedDict, total=False):
    topic: str
    plan: str
    answer: Any
    done: str


async def _think(state: HitlState) -> dict[str, Any]:
    return {"plan": f"plan for {state.get('topic', '?')}"}


async def _ask(state: HitlState) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the plan?", "plan": state.get("plan")})
    return {"answer": answer}


async def _act(state: HitlState) -> dict[str, Any]:
    return {"done": f"acted on {state.get('answer')!r}"}


def _build_hitl() -> Any:
    b = StateGraph(HitlState)
    b.add_node("think", _think)
    b.add_node("ask", _ask)
    b.add_node("act", _act)
    b.add_edge(START, "think")
    b.add_edge("think", "ask")
    b.add_edge("ask", "act")
    b.add_edge("act", END)
    return b.compile()


hitl = _build_hitl()


class NestedState(TypedDict, total=False):
    trail: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    async def node(state: NestedState) -> dict[str, Any]:
        return {"trail": [name]}

    return node


def _build_inner() -> Any:
    b = StateGraph(NestedState)
    b.add_node("inner_a", _step("inner_a"))
    b.add_node("inner_b", _step("inner_b"))
    b.add_edge(START, "inner_a")
    b.add_edge("inner_a", "inner_b")
    b.add_edge("inner_b", END)
    return b.compile()


def _build_nested() -> Any:
    b = StateGraph(NestedState)
    b.add_node("first", _step("first"))
    b.add_node("inner", _build_inner())
    b.add_node("last", _step("last"))
    b.add_edge(START, "first")
    b.add_edge("first", "inner")
    b.add_edge("inner", "last")
    b.add_edge("last", END)
    return b.compile()


nested = _build_nested()


class MultiState(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def _question(text: str) -> Any:
    async def node(state: MultiState) -> dict[str, Any]:
        return {"answers": [f"{text}={interrupt(text)}"]}

    return node


def _build_multi() -> Any:
    b = StateGraph(MultiState)
    b.add_node("left", _question("left?"))
    b.add_node("right", _question("right?"))
    b.add_edge(START, "left")
    b.add_edge(START, "right")
    b.add_edge("left", END)
    b.add_edge("right", END)
    return b.compile()


multi = _build_multi()


class SlowState(TypedDict, total=False):
    done: Annotated[list[int], operator.add]


async def _tick(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
    await asyncio.sleep(float(config.get("configurable", {}).get("delay", 0.2)))
    return {"done": [len(state.get("done", []))]}


def _more(state: SlowState, config: RunnableConfig) -> str:
    steps = int(config.get("configurable", {}).get("steps", 5))
    return "tick" if len(state.get("done", [])) < steps else END


def _build_slow() -> Any:
    b = StateGraph(SlowState)
    b.add_node("tick", _tick)
    b.add_edge(START, "tick")
    b.add_conditional_edges("tick", _more, ["tick", END])
    return b.compile()


slow = _build_slow()


async def _fail(state: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("kaboom")


def _build_fail() -> Any:
    b = StateGraph(SlowState)
    b.add_node("explode", _fail)
    b.add_edge(START, "explode")
    b.add_edge("explode", END)
    return b.compile()


fail = _build_fail()


class MemoryState(TypedDict, total=False):
    note: str
    recalled: list[str]


async def _remember(state: MemoryState) -> dict[str, Any]:
    """Writes through the run's `store` (the principal's items) and reads them back."""
    from langgraph.config import get_store

    store = get_store()
    await store.aput(("notes",), state.get("note", "?"), {"text": state.get("note", "?")})
    items = await store.asearch(("notes",))
    return {"recalled": sorted(i.key for i in items)}


def _build_memory() -> Any:
    b = StateGraph(MemoryState)
    b.add_node("remember", _remember)
    b.add_edge(START, "remember")
    b.add_edge("remember", END)
    return b.compile()


memory = _build_memory()


@dataclass
class GreetContext:
    user: str = "nobody"


class GreetState(TypedDict, total=False):
    greeting: str


async def _greet(state: GreetState, runtime: Runtime[GreetContext]) -> dict[str, Any]:
    return {"greeting": f"hello {runtime.context.user}"}


def _build_context() -> Any:
    b = StateGraph(GreetState, context_schema=GreetContext)
    b.add_node("greet", _greet)
    b.add_edge(START, "greet")
    b.add_edge("greet", END)
    return b.compile()


context = _build_context()


class _GatedChunks(GenericFakeChatModel):
    gate: str

    async def _astream(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        k = 0
        async for chunk in super()._astream(*args, **kwargs):
            if k:
                opened = Path(self.gate) / f"go-{k - 1}"
                while not opened.exists():  # the test's client has not seen chunk k-1 yet
                    await asyncio.sleep(0.01)
            yield chunk
            (Path(self.gate) / f"made-{k}").touch()  # chunk k went to LangGraph's stream
            k += 1


async def _gated_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable", {})
    words = int(configurable.get("words", 6))
    text = " ".join(f"t{i}" for i in range(words))
    model = _GatedChunks(messages=iter([AIMessage(content=text)]), gate=configurable["gate"])
    reply = await model.ainvoke(state["messages"], config)
    return {"messages": [reply]}


def _build_gated() -> Any:
    b = StateGraph(MessagesState)
    b.add_node("model", _gated_model)
    b.add_edge(START, "model")
    b.add_edge("model", END)
    return b.compile()


gated = _build_gated()
