"""A real HTTP server that speaks enough of the OpenAI chat-completions API for a LangChain
chat model to judge through it (``POST /v1/chat/completions``), as vLLM, Ollama or
llama.cpp's server do: it records every request and answers from a script the test sets.

The answer goes where the request asks for it: as a tool call when the request offers
tools (``function_calling``), else in the message's content (``json_schema``, JSON mode
or plain text); with a ``usage`` block. Served by uvicorn in the test's own event loop,
on a socket bound before the server starts: a client may connect at once (the kernel
queues it), so nothing waits for the server to come up."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass(frozen=True)
class Reply:
    """One answer: ``text`` as the model's output, or ``status`` for an error, or a hang
    (``hang``: the request is never answered, until the server stops)."""

    text: str = ""
    status: int = 200
    hang: bool = False
    usage: tuple[int, int] | None = None  # (prompt, completion); else counted in words


@dataclass
class ChatServer:
    """The server's state: what it received, what it answered, and what it answers next."""

    script: list[Reply] = field(default_factory=list)  # answers in order, then ``otherwise``
    otherwise: Callable[[dict[str, Any]], Reply] = lambda body: Reply("{}")
    got: list[dict[str, Any]] = field(default_factory=list)
    usages: list[dict[str, int]] = field(default_factory=list)  # what each answer reported
    url: str = ""
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.got.append(body)
        reply = self.script.pop(0) if self.script else self.otherwise(body)
        if reply.hang:
            await self._release.wait()
        # The client keeps no connection for a later test's event loop to find unclosed.
        headers = {"connection": "close"}
        if reply.status != 200:
            error = {"message": "the server failed", "type": "server_error"}
            # without it the client retries, waiting between tries; one try is the case here
            headers["x-should-retry"] = "false"
            return JSONResponse({"error": error}, reply.status, headers)
        return JSONResponse(self._completion(body, reply), headers=headers)

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        words = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
        prompt, completion = reply.usage or (words, len(reply.text.split()))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        self.usages.append(usage)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        tools = body.get("tools") or []
        if tools:  # structured output by a function call: the answer is its arguments
            name = tools[0]["function"]["name"]
            call = {"name": name, "arguments": reply.text}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{next(self._ids)}", "type": "function", "function": call}
                ],
            }
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "local"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tools else "stop",
                }
            ],
            "usage": usage,
        }

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        """The messages of one request, as the server received them."""
        said: list[dict[str, Any]] = self.got[index]["messages"]
        return said


def verdict(**answer: Any) -> str:
    return json.dumps(answer)


@contextlib.asynccontextmanager
async def chat_server() -> AsyncIterator[ChatServer]:
    """A running server; ``url`` is its ``/v1`` base, as ``OPENAI_BASE_URL`` takes it."""
    state = ChatServer()
    app = Starlette(routes=[Route("/v1/chat/completions", state.completions, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    state.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield state
    finally:
        state._release.set()
        server.should_exit = True
        await task
        sock.close()
