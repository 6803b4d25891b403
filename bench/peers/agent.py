"""``agent``: a tool-calling agent shaped like a real one, for bench/agents.py. Every server
of the comparison serves it from this folder's langgraph.json.

The model is a fake chat model (a LangChain ``BaseChatModel`` with a streaming
``_astream``): each call waits like a provider, 0.5 to 2 s, over which it streams
``TOKENS`` tokens evenly spread; its first three calls end with a tool call, the fourth
answers. The tools wait 0.1 to 0.5 s of asyncio I/O. Every latency comes from a random
generator seeded with the run's task (its first message) and the turn, so each server gets
the same runs.

Each token carries what the bench measures, in its text (``" @<emit>~<lag>"``): the wall
clock when the model emitted it (``time.time()``; the client, on the same machine, takes
receipt − emit) and the event-loop lag the model just saw, the overshoot in ms of the
``asyncio.sleep`` that spaced this token from the last (the loop running the graph, inside
the server). In the text rather than in ``response_metadata``: outlast's ``messages-tuple``
events carry only the content and tool-call chunks of the chunks it coalesces per
``OUTLAST_MESSAGE_FLUSH_INTERVAL``, and the text survives every server's wire.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import agenerate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

TOKENS = 100
MODEL_CALLS = 4  # three end with a tool call, the last answers
MODEL_SECONDS = (0.5, 2.0)
TOOL_SECONDS = (0.1, 0.5)
TOOLS = ("search", "fetch", "compute")


def _rng(task: str, turn: int, what: str) -> random.Random:
    return random.Random(f"{task}/{turn}/{what}")


def _task(messages: list[BaseMessage]) -> tuple[str, int]:
    """The run's task (its first message, the seed) and this call's turn (the model's
    replies so far)."""
    task = str(messages[0].content) if messages else ""
    return task, sum(isinstance(m, AIMessage) for m in messages)


class FakeChat(BaseChatModel):
    """A chat model that streams stamped tokens at a provider's pace, and calls tools."""

    @property
    def _llm_type(self) -> str:
        return "bench-fake-chat"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("async only: the servers run graphs on an event loop")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Called when nothing streams (no ``messages`` mode): the same chunks, joined."""
        return await agenerate_from_stream(self._astream(messages, stop, **kwargs))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        task, turn = _task(messages)
        rng = _rng(task, turn, "model")
        gap = rng.uniform(*MODEL_SECONDS) / TOKENS
        loop = asyncio.get_running_loop()
        for i in range(TOKENS):
            asked = loop.time()
            await asyncio.sleep(gap)
            lag_ms = max(0.0, 1000 * (loop.time() - asked - gap))
            text = f" @{time.time():.4f}~{lag_ms:.2f}"
            last = i == TOKENS - 1
            chunk = AIMessageChunk(content=text, tool_call_chunks=self._call(task, turn, last))
            if last:
                chunk.chunk_position = "last"
            yield ChatGenerationChunk(message=chunk)

    @staticmethod
    def _call(task: str, turn: int, last: bool) -> list[Any]:
        if not last or turn >= MODEL_CALLS - 1:
            return []
        name = TOOLS[turn % len(TOOLS)]
        args = json.dumps({"task": task, "turn": turn})
        return [tool_call_chunk(name=name, args=args, id=f"call_{turn}", index=0)]


async def _io(task: str, turn: int, name: str) -> str:
    await asyncio.sleep(_rng(task, turn, name).uniform(*TOOL_SECONDS))
    return f"{name} result for turn {turn}"


@tool
async def search(task: str, turn: int) -> str:
    """Search the web for the task."""
    return await _io(task, turn, "search")


@tool
async def fetch(task: str, turn: int) -> str:
    """Fetch a page the search found."""
    return await _io(task, turn, "fetch")


@tool
async def compute(task: str, turn: int) -> str:
    """Compute what the task asks."""
    return await _io(task, turn, "compute")


model = FakeChat()


async def _model(state: MessagesState) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


def _build() -> Any:
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("model", _model)
    builder.add_node("tools", ToolNode([search, fetch, compute]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile()


agent = _build()
