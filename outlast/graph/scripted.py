"""The offline default model: a deterministic, scripted chat model.

It answers from the conversation alone: the same messages (and the same bound tools)
always give the same reply, the same tool calls and the same tool call ids. That is what
makes it useful for a durable runtime: a run killed mid-way and resumed from its last
checkpoint takes exactly the path it would have taken, and the effects ledger, keyed by
tool call id, recognises the calls it already made.

The "script" is a plan read off the first user message (keywords choose the steps):

- ``files`` / ``notes`` / ``search`` → ``search_files``, then ``read_file`` for what it found;
- ``total`` / ``count`` / ``compute`` / ``sum`` → ``compute`` over the word counts it read;
- ``job`` / ``render`` → ``wait_for_job``; ``sleep N`` → ``sleep_until``;
- ``event KEY`` / ``signal KEY`` → ``wait_for_event``;
- ``ask`` / ``who`` / ``approve`` → ``ask_human``;
- ``report`` → ``write_report``; ``email`` / ``mail`` → ``send_email``;

each step once, in that order, only when the tool is bound; then a final answer that
summarises what the tools returned. It streams: content in 12-character pieces, tool
calls as 24-character argument fragments, so token streaming and activity leases behave
as with a real model. Usage metadata is derived from the text lengths (about four
characters a token), so token budgets move.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

NAME = "scripted"
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

# (tool, keywords that put it in the plan), in plan order.
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("search_files", ("file", "notes", "search")),
    ("read_file", ("file", "notes", "search")),
    ("compute", ("total", "count", "compute", "sum")),
    ("wait_for_job", ("job", "render")),
    ("sleep_until", ("sleep",)),
    ("wait_for_event", ("event", "signal")),
    ("ask_human", ("ask", "who", "approve")),
    ("write_report", ("report",)),
    ("send_email", ("email", "mail")),
)


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)


def _task(messages: Sequence[BaseMessage]) -> str:
    for message in messages:
        if isinstance(message, HumanMessage) and message.name != "supervisor":
            return _text(message)
    return ""


def _results(messages: Sequence[BaseMessage]) -> dict[str, list[str]]:
    """Tool name → the contents of its results, in order."""
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                names[str(call["id"])] = call["name"]
    out: dict[str, list[str]] = {}
    for message in messages:
        if isinstance(message, ToolMessage):
            out.setdefault(names.get(message.tool_call_id, "?"), []).append(_text(message))
    return out


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _after(task: str, word: str) -> str | None:
    match = re.search(rf"\b{word}\w*\s+(?:for\s+|on\s+|of\s+)?['\"]?([\w.:/-]+)", task)
    return match.group(1) if match else None


def _plan(task: str, bound: set[str]) -> list[str]:
    lowered = task.lower()
    return [
        tool
        for tool, words in PLAN
        if tool in bound and any(re.search(rf"\b{w}", lowered) for w in words)
    ]


class _Step:
    """What the model does next: tool calls, or a final answer."""

    def __init__(self, content: str, calls: list[dict[str, Any]]) -> None:
        self.content = content
        self.calls = calls


def _heeded(messages: Sequence[BaseMessage]) -> str:
    """A reminder from the supervisor (the last message) is acknowledged in the reply."""
    last = messages[-1] if messages else None
    if isinstance(last, HumanMessage) and last.name == "supervisor":
        return f"(supervisor: {_text(last)[:120]}) "
    return ""


def decide(messages: Sequence[BaseMessage], bound: set[str]) -> _Step:
    """The next move, from the conversation only (the heart of the determinism)."""
    step = _next(messages, bound)
    step.content = _heeded(messages) + step.content
    return step


def _next(messages: Sequence[BaseMessage], bound: set[str]) -> _Step:
    task = _task(messages)
    done = _results(messages)
    turn = sum(1 for m in messages if isinstance(m, AIMessage))
    for tool in _plan(task, bound):
        if tool in done:
            continue
        args_list = _arguments(tool, task, done)
        if not args_list:
            continue
        calls = [
            {"name": tool, "args": args, "id": f"call_{turn}_{i}_{tool}", "type": "tool_call"}
            for i, args in enumerate(args_list)
        ]
        return _Step(f"Next: {tool.replace('_', ' ')}.", calls)
    return _Step(_final(task, done), [])


def _arguments(tool: str, task: str, done: dict[str, list[str]]) -> list[dict[str, Any]]:
    lowered = task.lower()
    if tool == "search_files":
        return [{"pattern": _after(lowered, "matching") or "*"}]
    if tool == "read_file":
        found = _json(done.get("search_files", ["[]"])[0]) or []
        return [{"path": str(item["path"])} for item in found[:3] if isinstance(item, dict)]
    if tool == "compute":
        counts = [
            int(doc["words"])
            for doc in (_json(text) for text in done.get("read_file", []))
            if isinstance(doc, dict) and "words" in doc
        ]
        return [{"expression": " + ".join(str(c) for c in counts) or "0"}]
    if tool == "wait_for_job":
        return [{"kind": "render", "seconds": 2}]
    if tool == "sleep_until":
        seconds = re.search(r"sleep\s+(\d+(?:\.\d+)?)", lowered)
        return [{"seconds": float(seconds.group(1)) if seconds else 1.0}]
    if tool == "wait_for_event":
        return [{"key": _after(task, "event") or _after(task, "signal") or "go"}]
    if tool == "ask_human":
        return [{"question": "Who should receive the report? (an email address)"}]
    if tool == "write_report":
        return [{"title": "Workspace report", "body": _summary(done)}]
    if tool == "send_email":
        return [
            {
                "to": _recipient(task, done),
                "subject": "Workspace report",
                "body": _summary(done),
            }
        ]
    return []


def _recipient(task: str, done: dict[str, list[str]]) -> str:
    for text in [*done.get("ask_human", []), task]:
        found = EMAIL.search(text)
        if found:
            return found.group(0)
    return "ops@example.com"


def _summary(done: dict[str, list[str]]) -> str:
    lines = []
    for tool, results in done.items():
        if tool in ("write_report", "send_email"):
            continue
        for result in results:
            lines.append(f"- {tool}: {result[:200]}")
    return "\n".join(lines) or "(no tool results)"


def _final(task: str, done: dict[str, list[str]]) -> str:
    if not done:
        return f"(scripted model) You said: {task!r}. I have no tools to call for that."
    parts = [f"{tool} ×{len(results)}" for tool, results in done.items()]
    last = next(iter(done.get("send_email", []) or done.get("write_report", []) or [""]))
    return f"Done: {', '.join(parts)}. {last}".strip()


def _usage(messages: Sequence[BaseMessage], step: _Step) -> dict[str, int]:
    tokens_in = sum(len(_text(m)) for m in messages) // 4 + 1
    tokens_out = (len(step.content) + len(json.dumps([c["args"] for c in step.calls]))) // 4 + 1
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }


def _pieces(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ScriptedChatModel(BaseChatModel):
    """Deterministic offline chat model (see the module docstring). ``delay``: seconds
    between chunks when it streams asynchronously, to make a run slow enough to watch."""

    delay: float = 0.0
    model_name: str = NAME

    @property
    def _llm_type(self) -> str:
        return NAME

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | BaseTool | Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _step(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> _Step:
        bound = {str(t["function"]["name"]) for t in kwargs.get("tools") or []}
        return decide(messages, bound)

    def _meta(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "model_provider": NAME}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        step = self._step(messages, kwargs)
        message = AIMessage(
            content=step.content,
            tool_calls=step.calls,
            usage_metadata=_usage(messages, step),
            response_metadata=self._meta(),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)

    def _chunks(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> list[AIMessageChunk]:
        step = self._step(messages, kwargs)
        chunks = [AIMessageChunk(content=piece) for piece in _pieces(step.content)]
        for index, call in enumerate(step.calls):
            args = json.dumps(call["args"])
            for n, fragment in enumerate(_pieces(args, 24)):
                chunks.append(
                    AIMessageChunk(
                        content="",
                        tool_call_chunks=[
                            {
                                "name": call["name"] if n == 0 else None,
                                "args": fragment,
                                "id": call["id"] if n == 0 else None,
                                "index": index,
                                "type": "tool_call_chunk",
                            }
                        ],
                    )
                )
        chunks.append(
            AIMessageChunk(
                content="",
                usage_metadata=_usage(messages, step),  # type: ignore[arg-type]
                response_metadata=self._meta(),
                chunk_position="last",
            )
        )
        return chunks

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # The base class reports each chunk to the callbacks (token streaming).
        for chunk in self._chunks(messages, kwargs):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, kwargs):
            if self.delay > 0:
                await asyncio.sleep(self.delay)
            yield ChatGenerationChunk(message=chunk)
