"""The thread's WebSocket (``/threads/{t}/stream/events``): commands in, responses and
events out, on one connection.

Every inbound frame is a command (``{"id", "method", "params"}``). The socket owns its
subscriptions: ``subscription.subscribe`` opens one (its filter, and ``since`` as on the
SSE stream), ``subscription.unsubscribe`` closes it, ``subscription.reconnect`` restarts
them from ``last_event_id``; each subscription sends the thread's events as the SSE
stream does (``events.thread_events``), so both transports say the same thing from the
same cursor. Other methods are the commands module's (``commands.dispatch``), as
``POST /threads/{t}/commands`` answers them. Subscriptions end with the connection; the
run never does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.protocol import commands
from outlast.api.protocol.events import Filter, parse_request, thread_events
from outlast.errors import OutlastError

router = APIRouter(tags=["langgraph"])
log = logging.getLogger(__name__)

# A refused upgrade: the status a client reads (a browser reads none) is 403; the close
# code says which (4000 + the HTTP status, as LangGraph's SDKs read it after an accept).
_NOT_FOUND = 4404


def _error(command_id: Any, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": command_id, "error": code, "message": message}


def _success(command_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"type": "success", "id": command_id, "result": result}


@router.websocket("/threads/{thread_id}/stream/events")
async def thread_socket(websocket: WebSocket, thread_id: str) -> None:
    ctx = ctx_of(websocket)
    if await ctx.runs.owners.thread(thread_id) is None:
        await websocket.close(code=_NOT_FOUND)
        return
    await websocket.accept()
    session = _Session(ctx, thread_id, websocket)
    try:
        await session.serve()
    finally:
        await session.close()


class _Session:
    """One connection: its subscriptions, each a task sending the events it admits."""

    def __init__(self, ctx: AppContext, thread_id: str, websocket: WebSocket) -> None:
        self.ctx, self.thread_id, self.websocket = ctx, thread_id, websocket
        self._subs: dict[str, tuple[Filter, asyncio.Task[None]]] = {}
        self._next = 1
        self._send = asyncio.Lock()  # one frame at a time, whoever sends it
        self._closed = False

    async def serve(self) -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                raw = await self.websocket.receive_text()
                await self.send(await self.answer(raw))

    async def send(self, frame: dict[str, Any]) -> None:
        text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False, default=str)
        async with self._send:
            await self.websocket.send_text(text)

    async def answer(self, raw: str) -> dict[str, Any]:
        try:
            command = json.loads(raw)
        except ValueError:
            return _error(None, "invalid_argument", "a command is a JSON object")
        if not isinstance(command, dict) or not isinstance(command.get("method"), str):
            return _error(None, "invalid_argument", "a command has an `id` and a `method`")
        command_id, method = command.get("id"), command["method"]
        given = command.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            if method == "subscription.subscribe":
                return _success(command_id, self.subscribe(params))
            if method == "subscription.unsubscribe":
                return self.unsubscribe(command_id, params)
            if method == "subscription.reconnect":
                return _success(command_id, self.reconnect(params))
        except OutlastError as exc:
            return _error(command_id, "invalid_argument", str(exc))
        return await _dispatch(self.ctx, self.thread_id, command)

    def subscribe(self, params: dict[str, Any]) -> dict[str, Any]:
        wanted, since = parse_request(params)
        sub_id = f"sub-{self._next}"
        self._next += 1
        self._start(sub_id, wanted, since)
        return {"subscription_id": sub_id}

    def unsubscribe(self, command_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        found = self._subs.pop(str(params.get("subscription_id")), None)
        if found is None:
            return _error(command_id, "no_such_subscription", "no such subscription here")
        found[1].cancel()
        return _success(command_id, {})

    def reconnect(self, params: dict[str, Any]) -> dict[str, Any]:
        """The subscriptions named (or all of this connection's) again from after
        ``last_event_id``: what the client missed, and nothing it has."""
        raw = str(params.get("last_event_id") or "")
        since = int(raw) if raw.isdigit() else None
        names = params.get("subscriptions")
        chosen = [s for s in self._subs if not isinstance(names, list) or s in names]
        for sub_id in chosen:
            wanted, task = self._subs[sub_id]
            task.cancel()
            self._start(sub_id, wanted, since)
        return {"restored": bool(chosen)}

    def _start(self, sub_id: str, wanted: Filter, since: int | None) -> None:
        task = asyncio.create_task(self._pump(wanted, since), name=f"protocol-{sub_id}")
        self._subs[sub_id] = (wanted, task)

    async def _pump(self, wanted: Filter, since: int | None) -> None:
        frames = thread_events(self.ctx, self.thread_id, since, wanted, lambda: self._closed)
        try:
            async with contextlib.aclosing(frames) as items:
                async for frame in items:
                    await self.send(frame)
        except (asyncio.CancelledError, WebSocketDisconnect):
            raise
        except Exception as exc:
            # A read that failed (the database away, say): said, then the connection
            # closed as an error, so the client reconnects with its cursor rather than
            # waiting on a subscription that sends nothing more.
            log.warning("thread %s: a subscription's read failed: %r", self.thread_id, exc)
            with contextlib.suppress(Exception):
                await self.send(
                    _error(None, "unknown_error", "the thread's events could not be read")
                )
                await self.websocket.close(code=1011)

    async def close(self) -> None:
        self._closed = True
        tasks = [task for _, task in self._subs.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _dispatch(ctx: AppContext, thread_id: str, command: dict[str, Any]) -> dict[str, Any]:
    """A command that is not the socket's own, answered as ``POST /threads/{t}/commands``
    answers it."""
    return await commands.dispatch(ctx, thread_id, command)
