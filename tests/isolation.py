"""The isolation matrix (``tests/test_isolation_matrix.py``): the routes the app serves,
read from the app itself; alice's objects, one of each kind; and, for every route, how
another principal (bob) calls it on each object of the kind it touches, and what the
face must answer.

A route is a key: ``(METHOD, path template)`` for HTTP, ``("WEBSOCKET", path)``,
``("A2A", method)`` and ``("MCP", method)`` for the JSON-RPC methods those endpoints
serve, ``("MCP tool", name)`` for the tools (every graph is ``<graph>``, an assistant of
the caller's is ``<assistant>``), ``("COMMAND", name)`` for protocol v2's commands. Every
key the app serves is either probed (``probes``), public with a reason (``PUBLIC``), or
the carrier of a method table whose methods are probed (``CARRIERS``); a key the table
does not know, or one it knows that the app no longer serves, fails the matrix.

A cell is (probe, object): bob's call, checked three ways. The answer is what the face
says for "no such thing" (``Probe.expect``); nothing in it is alice's (her secret values,
and every id of hers bob did not send himself); and her object is as it was (re-read as
alice after every call that could change something, and once more at the end).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from mcp.shared.exceptions import MCPError
from starlette.routing import Mount, WebSocketRoute
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus, WebSocketException

from outlast.api.protocol.commands import WEBSOCKET_ONLY
from outlast.api.protocol.methods import METHODS
from tests.harness import NotYet, eventually
from tests.mcp_client import Peer

TESTS = Path(__file__).resolve().parent
GRAPH = "hitl"  # think → interrupt() → act: a thread with state, a run that asks
SIGNALLED = "eventual"  # waits for a signal: a run that asks nobody
MCP_VERSION = "2025-11-25"  # the revision with tasks (api/mcp/tasks.py)

RouteKey = tuple[str, str]
GRAPH_TOOL: RouteKey = ("MCP tool", "<graph>")
ASSISTANT_TOOL: RouteKey = ("MCP tool", "<assistant>")

# How long a body that is not a refusal is read: a refusal comes at once, and a stream
# that is not refused is a failed cell whatever it would say later. Never what a cell
# waits for: what was read by then is what the leak check reads.
READ_AT_MOST = 2.0


def manifest(tmp_path: Path, auth: str | None) -> Path:
    """The graphs the matrix runs, and the app's ``auth.py`` when there is one."""
    path = tmp_path / "langgraph.json"
    graphs = {GRAPH: f"{TESTS}/lg_graphs.py:hitl", SIGNALLED: f"{TESTS}/graphs.py:eventual"}
    body: dict[str, Any] = {"graphs": graphs}
    if auth is not None:
        body["auth"] = {"path": auth}
    path.write_text(json.dumps(body))
    return path


# -- the routes, as the app serves them -------------------------------------------------


def http_routes(app: FastAPI) -> set[RouteKey]:
    """Every HTTP (method, path template) and WebSocket path, an included router's and a
    mount's with their prefixes. HEAD is GET's (Starlette adds it to every GET route)."""
    found: set[RouteKey] = set()

    def walk(routes: Iterable[Any], prefix: str) -> None:
        for route in iter_route_contexts(list(routes)):
            original = route.original_route
            if isinstance(original, Mount):
                inner = getattr(original.app, "routes", None)
                if inner:
                    walk(inner, prefix + original.path)
                else:  # an app of its own (StaticFiles): whatever is under it
                    found.add(("GET", f"{prefix}{original.path}/{{path}}"))
            elif isinstance(original, WebSocketRoute) or route.methods is None:
                found.add(("WEBSOCKET", prefix + str(route.path)))
            else:
                for method in route.methods - {"HEAD"}:
                    found.add((method, prefix + str(route.path)))

    walk(app.routes, "")
    return found


def _endpoint_of(app: FastAPI, method: str, path: str) -> Any:
    for route in iter_route_contexts(list(app.routes)):
        if route.path == path and method in (route.methods or ()):
            return route.endpoint
    raise LookupError(f"{method} {path} is not served")


def a2a_methods(app: FastAPI) -> set[RouteKey]:
    """The JSON-RPC methods the A2A endpoint dispatches: the SDK's dispatcher's table,
    and its A2A 0.3 adapter's when it has one (``enable_v0_3_compat``)."""
    dispatcher = _endpoint_of(app, "POST", "/a2a/{graph_id}").__self__
    names = set(dispatcher.METHOD_TO_MODEL)
    adapter = getattr(dispatcher, "_v03_adapter", None)
    if adapter is not None:
        names |= set(adapter.METHOD_TO_MODEL)
    return {("A2A", name) for name in names}


def mcp_methods(app: FastAPI) -> set[RouteKey]:
    """The requests and notifications the MCP server has handlers for (the SDK keeps
    them in two tables and offers no listing of its own)."""
    server = app.state.mcp_face.server
    names = set(server._request_handlers) | set(server._notification_handlers)
    return {("MCP", name) for name in names}


def protocol_commands() -> set[RouteKey]:
    return {("COMMAND", name) for name in (*METHODS, *WEBSOCKET_ONLY)}


def served(app: FastAPI) -> set[RouteKey]:
    return http_routes(app) | a2a_methods(app) | mcp_methods(app) | protocol_commands()


def tool_keys(names: Iterable[str], graphs: Iterable[str], assistant_tool: str) -> set[RouteKey]:
    """The tools ``tools/list`` showed alice, as route keys: a name no graph, no assistant
    of hers and no entry of the table accounts for stays itself, and is unknown."""
    graph_names = set(graphs)
    keys: set[RouteKey] = set()
    for name in names:
        if name in graph_names:
            keys.add(GRAPH_TOOL)
        elif name == assistant_tool:
            keys.add(ASSISTANT_TOOL)
        else:
            keys.add(("MCP tool", name))
    return keys


# The routes that touch nothing of a principal's, and why; bob and a caller without
# credentials still call each once, and the answer must hold nothing of alice's.
PUBLIC: dict[RouteKey, str] = {
    ("GET", "/openapi.json"): "the API's description",
    ("GET", "/docs"): "the API's documentation page",
    ("GET", "/docs/oauth2-redirect"): "the documentation page's OAuth helper",
    ("GET", "/redoc"): "the API's documentation page",
    ("GET", "/"): "the console's page (static)",
    ("GET", "/console/{path}"): "the console's static files",
    ("GET", "/healthz"): "liveness",
    ("GET", "/readyz"): "readiness",
    ("GET", "/ok"): "the LangGraph face's health",
    ("GET", "/info"): "the server's version and flags",
    ("GET", "/metrics"): "process metrics, no principal's labels",
    ("GET", "/a2a/{graph_id}/.well-known/agent-card.json"): "a graph's Agent Card",
    ("A2A", "GetExtendedAgentCard"): "refused to everyone (no extended card)",
    ("A2A", "agent/getAuthenticatedExtendedCard"): "A2A 0.3's name of the same",
    ("MCP", "ping"): "the protocol's liveness",
    ("MCP", "server/discover"): "the server's capabilities",
}

# HTTP routes that carry a table of methods, each of which is probed as its own key.
CARRIERS: dict[RouteKey, str] = {
    ("POST", "/a2a/{graph_id}"): "A2A's JSON-RPC methods",
    ("POST", "/threads/{thread_id}/commands"): "protocol v2's commands (over HTTP)",
    ("MCP", "tools/call"): "the MCP tools, each a key (graphs, assistants, outlast's own)",
}


# -- answers ------------------------------------------------------------------------------


@dataclass
class Answer:
    """What a caller got: the HTTP status (None for an MCP request, which the SDK's session
    answers), the body as read, what it parsed to, and what bob sent (the ids in it are
    his to see again)."""

    status: int | None
    text: str
    sent: str
    data: Any = None
    error: bool = False  # a JSON-RPC error, a refused upgrade, an MCP error

    def __str__(self) -> str:
        head = f"{self.status} (an error)" if self.error else str(self.status)
        return f"{head} {self.text[:160]!r}"


def _parsed(text: str) -> Any:
    with contextlib.suppress(ValueError):
        return json.loads(text)
    for line in text.splitlines():  # an SSE stream's first data frame
        if line.startswith("data:"):
            with contextlib.suppress(ValueError):
                return json.loads(line[5:])
    return None


@dataclass
class Caller:
    """A principal, as each face is called: bearer credentials on every request, an MCP
    session of its own."""

    name: str
    token: str
    url: str
    http: httpx.AsyncClient
    mcp: Peer | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


async def call(
    c: Caller,
    method: str,
    path: str,
    *,
    body: Any = None,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    sent = f"{path} {json.dumps(params)} {json.dumps(body)} {json.dumps(headers)}"
    request = c.http.build_request(
        method, path, json=body, params=params, headers={**c.headers, **(headers or {})}
    )
    response = await c.http.send(request, stream=True)
    parts: list[str] = []
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(READ_AT_MOST):
                async for chunk in response.aiter_text():
                    parts.append(chunk)
    finally:
        await response.aclose()
    text = "".join(parts)
    return Answer(response.status_code, text, sent, _parsed(text))


async def a2a(c: Caller, graph: str, method: str, params: dict[str, Any]) -> Answer:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {} if "/" in method else {"A2A-Version": "1.0"}  # 0.3's names carry no version
    answer = await call(c, "POST", f"/a2a/{graph}", body=body, headers=headers)
    answer.error = isinstance(answer.data, dict) and "error" in answer.data
    return answer


async def mcp(c: Caller, method: str, params: dict[str, Any]) -> Answer:
    if c.mcp is None:  # a caller with no session (no credentials): the request itself
        return await _mcp_raw(c, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    sent = f"{method} {json.dumps(params)}"
    try:
        result = await c.mcp.wire.send_raw_request(method, params, {"timeout": 30})
    except MCPError as exc:
        return Answer(None, f"{exc.code} {exc.message} {exc.error.data!r}", sent, error=True)
    text = json.dumps(result)
    return Answer(None, text, sent, result, error=bool(result.get("isError")))


async def mcp_notify(c: Caller, method: str, params: dict[str, Any]) -> Answer:
    """A notification has no answer; a ping after it on the same session returns once the
    server has read it (handlers may still be running: the object's re-read is the check)."""
    if c.mcp is None:
        return await _mcp_raw(c, {"jsonrpc": "2.0", "method": method, "params": params})
    await c.mcp.wire.notify(method, params)
    await c.mcp.wire.send_raw_request("ping", None, {"timeout": 30})
    return Answer(None, "", f"{method} {json.dumps(params)}")


async def _mcp_raw(c: Caller, body: dict[str, Any]) -> Answer:
    accept = {"accept": "application/json, text/event-stream"}
    answer = await call(c, "POST", "/mcp", body=body, headers=accept)
    answer.error = answer.status != 200 or "error" in (answer.data or {})
    return answer


async def command(c: Caller, thread: str, method: str, params: dict[str, Any]) -> Answer:
    body = {"id": 1, "method": method, "params": params}
    answer = await call(c, "POST", f"/threads/{thread}/commands", body=body)
    answer.error = isinstance(answer.data, dict) and answer.data.get("type") == "error"
    return answer


async def socket(c: Caller, thread: str, frame: dict[str, Any] | None) -> Answer:
    """The thread's WebSocket: a refused upgrade is a refusal; an accepted one gets the
    frame, and its answer is what bob read."""
    url = c.url.replace("http", "ws", 1) + f"/threads/{thread}/stream/events"
    sent = f"{url} {json.dumps(frame)}"
    try:
        async with ws_connect(url, additional_headers=c.headers, open_timeout=30) as ws:
            text = ""
            if frame is not None:
                await ws.send(json.dumps(frame))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(READ_AT_MOST):
                        text = str(await ws.recv())
            return Answer(101, text, sent, _parsed(text))
    except InvalidStatus as exc:
        status = exc.response.status_code
        return Answer(status, exc.response.body.decode(errors="replace"), sent, error=True)
    except WebSocketException as exc:
        return Answer(None, repr(exc), sent, error=True)


# -- what a face says for "no such thing" ----------------------------------------------------

Check = Callable[[Answer], str | None]  # None: as the face should answer; else what is wrong


def refused(*statuses: int) -> Check:
    def check(a: Answer) -> str | None:
        if a.status in statuses:
            return None
        return f"answered {a} where a refusal is {'/'.join(map(str, statuses))}"

    return check


def rpc_refused(a: Answer) -> str | None:
    return None if a.error else f"answered {a} where a refusal is a JSON-RPC error"


def command_refused(*codes: str) -> Check:
    """Protocol v2: an error envelope (``200``), one of ``codes``."""

    def check(a: Answer) -> str | None:
        code = a.data.get("error") if isinstance(a.data, dict) else None
        if a.status == 200 and a.error and code in codes:
            return None
        return f"answered {a} where a refusal is an error envelope {'/'.join(codes)}"

    return check


def command_empty(result: dict[str, Any]) -> Check:
    """Protocol v2 reads another's thread as no thread: the empty ``result``, at seq 0."""

    def check(a: Answer) -> str | None:
        d = a.data if isinstance(a.data, dict) else {}
        head = (d.get("meta") or {}).get("applied_through_seq")
        if a.status == 200 and d.get("result") == result and head == 0:
            return None
        return f"answered {a} where no thread reads {result} at seq 0"

    return check


def socket_refused(a: Answer) -> str | None:
    """Refused before it is accepted: the close comes as a 403 to the handshake."""
    if a.error and a.status == 403:
        return None
    return f"answered {a} where the upgrade is refused"


def unauthenticated(a: Answer) -> str | None:
    """No credentials: refused before anything is looked up (a WebSocket's handshake
    with a 403)."""
    if a.status == 401 or (a.status == 403 and a.sent.startswith("ws")):
        return None
    return f"answered {a} to a caller with no credentials"


def listed(want: Callable[[Any], bool], what: str, *statuses: int) -> Check:
    """A listing of bob's own: ``200`` (or one of ``statuses``) with ``what``."""

    def check(a: Answer) -> str | None:
        if a.status in statuses:
            return None
        if a.status in (200, None) and not a.error and want(a.data):
            return None
        return f"answered {a} where {what}"

    return check


def anything(a: Answer) -> str | None:
    """Bob's own doing (his own run, his own namespace): any answer but a failure; the
    leak and change checks are the cell's."""
    if a.status is not None and a.status >= 500:
        return f"answered {a}"
    return None


# -- alice's objects ------------------------------------------------------------------------


@dataclass
class Obj:
    """One of alice's objects: what a call names it by (``ids``: every one is private
    but the graph's name), and the values only she knows (``secrets``)."""

    kind: str
    group: str
    ids: dict[str, str]
    secrets: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> str:
        return self.ids[name]

    def tokens(self) -> dict[str, str]:
        """Each string that must not reach bob unless he sent it, with what it is."""
        found = {v: f"{self.kind}'s secret {k}" for k, v in self.secrets.items()}
        for k, v in self.ids.items():
            if k != "graph":
                found.setdefault(v, f"{self.kind}'s {k}")
        return found


def secret(what: str) -> str:
    return f"s3cret-{what}-{uuid.uuid4().hex[:12]}"


def new_id() -> str:
    return str(uuid.uuid4())


class Alice:
    """The owner: makes each kind of object, and reads each back."""

    def __init__(self, caller: Caller, hooks_url: str) -> None:
        self.c = caller
        self.hooks_url = hooks_url
        self.sessions: list[_RawSession] = []

    async def json(
        self, method: str, path: str, body: Any = None, expect: int = 200, **params: Any
    ) -> Any:
        response = await self.c.http.request(
            method, path, json=body, params=params or None, headers=self.c.headers
        )
        assert response.status_code == expect, (method, path, response.text)
        return response.json() if response.content else None

    async def run_status(self, run_id: str, status: str) -> dict[str, Any]:
        async def probe() -> dict[str, Any]:
            snap: dict[str, Any] = await self.json("GET", f"/v1/runs/{run_id}")
            if snap["status"] != status:
                raise NotYet(snap["status"])
            return snap

        return await eventually(probe, what=f"alice's run {run_id} {status}")

    # -- the groups: the kinds made together -------------------------------------------

    async def thread_state(self) -> list[Obj]:
        """A thread with state and no run: made, then updated as a node."""
        value, tag = secret("state"), secret("tag")
        thread = await self.json("POST", "/threads", {"metadata": {"graph_id": GRAPH, "tag": tag}})
        t = thread["thread_id"]
        update = {"values": {"topic": value}, "as_node": "think"}
        stored = await self.json("POST", f"/threads/{t}/state", update)
        ids = {"thread": t, "checkpoint": stored["checkpoint_id"], "graph": GRAPH}
        return [Obj("thread:state", "thread:state", ids, {"value": value, "tag": tag})]

    async def thread_done(self) -> list[Obj]:
        """A thread made by a run through /v1 that asked, was answered and completed."""
        topic, reply, t = secret("done-topic"), secret("done-answer"), new_id()
        body = {"graph": GRAPH, "thread_id": t, "input": {"topic": topic}}
        run = (await self.json("POST", "/v1/runs", body, 202))["id"]
        wait = (await self.run_status(run, "waiting"))["wait"]["id"]
        await self.json("POST", f"/v1/runs/{run}/input", {"wait_id": wait, "value": reply}, 202)
        await self.run_status(run, "completed")
        state = await self.json("GET", f"/threads/{t}/state")
        ids = {"thread": t, "run": run, "lg_run": run, "wait": wait, "graph": GRAPH}
        ids["checkpoint"] = state["checkpoint_id"]
        secrets = {"topic": topic, "answer": reply}
        return [
            Obj("thread:done", "done", ids, secrets),
            Obj("run:done", "done", ids, secrets),
        ]

    async def thread_waiting(self) -> list[Obj]:
        """A thread made by a LangGraph run that waits at its interrupt."""
        topic, t = secret("waiting-topic"), new_id()
        body = {"assistant_id": GRAPH, "input": {"topic": topic}, "if_not_exists": "create"}
        lg = await self.json("POST", f"/threads/{t}/runs", body)

        async def interrupted() -> dict[str, Any]:
            state: dict[str, Any] = await self.json("GET", f"/threads/{t}/state")
            if not state["interrupts"]:
                raise NotYet(state)
            return state

        state: dict[str, Any] = await eventually(interrupted, what="alice's thread interrupted")
        snap = await self.run_status(lg["run_id"], "waiting")
        ids = {
            "thread": t,
            "run": snap["id"],
            "lg_run": lg["run_id"],
            "wait": snap["wait"]["id"],
            "interrupt": state["interrupts"][0]["id"],
            "checkpoint": state["checkpoint_id"],
            "graph": GRAPH,
        }
        secrets = {"topic": topic}
        return [
            Obj("thread:waiting", "waiting", ids, secrets),
            Obj("run:waiting", "waiting", ids, secrets),
        ]

    async def run_signal(self) -> list[Obj]:
        """A run that waits for a signal (nobody's answer)."""
        key, idem = secret("signal"), secret("idem")
        # Made with an Idempotency-Key and a body that names nothing of hers: bob sends
        # both again, as a client that guessed or reused them would.
        body = {"graph": SIGNALLED, "input": {}, "config": {"configurable": {"keys": [key]}}}
        made = await self.c.http.post(
            "/v1/runs", json=body, headers={**self.c.headers, "Idempotency-Key": idem}
        )
        assert made.status_code == 202, made.text
        snap = await self.run_status(made.json()["id"], "waiting")
        ids = {"thread": snap["thread_id"], "run": snap["id"], "lg_run": snap["id"]}
        ids.update(wait=snap["wait"]["id"], graph=SIGNALLED, signal=key, idempotency_key=idem)
        return [Obj("run:signal", "signal", ids, {}, {"body": body})]

    async def a2a_task(self) -> list[Obj]:
        """A task sent through A2A that asks (input-required), and its push config."""
        topic, message_id = secret("a2a-topic"), new_id()
        message = {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"data": {"topic": topic}}],
        }
        sent = await a2a(
            self.c,
            GRAPH,
            "SendMessage",
            {"message": message, "configuration": {"returnImmediately": True}},
        )
        assert not sent.error and isinstance(sent.data, dict), sent
        task = sent.data["result"]["task"]
        snap = await self.run_status(task["id"], "waiting")
        ids = {
            "thread": task["contextId"],
            "run": task["id"],
            "lg_run": task["id"],
            "wait": snap["wait"]["id"],
            "graph": GRAPH,
            "message": message_id,
        }
        config_id, url, token = new_id(), f"{self.hooks_url}/{secret('push-url')}", secret("token")
        push = {"taskId": task["id"], "id": config_id, "url": url, "token": token}
        made = await a2a(self.c, GRAPH, "CreateTaskPushNotificationConfig", push)
        assert not made.error, made
        task_obj = Obj("task:a2a", "a2a", ids, {"topic": topic})
        config = Obj(
            "push-config", "a2a", {**ids, "config": config_id}, {"url": url, "token": token}
        )
        return [task_obj, config]

    async def mcp_task(self) -> list[Obj]:
        """A tool call made a task (MCP 2025-11-25) that asks."""
        assert self.c.mcp is not None
        topic, key = secret("mcp-topic"), secret("mcp-key")
        task_id = await self.c.mcp.call_as_task(
            GRAPH, {"topic": topic}, **{"outlast/idempotency_key": key}
        )
        snap = await self.run_status(task_id, "waiting")
        ids = {"thread": snap["thread_id"], "run": task_id, "lg_run": task_id, "graph": GRAPH}
        ids.update(wait=snap["wait"]["id"], idempotency_key=key)
        return [Obj("task:mcp", "mcp-task", ids, {"topic": topic})]

    async def mcp_session(self) -> list[Obj]:
        """An MCP session of alice's with a tool call in flight (its run waits for a
        signal, so the call stays open)."""
        session = await _RawSession.open(self.c)
        self.sessions.append(session)
        key = secret("call-signal")
        params = {
            "name": SIGNALLED,
            "arguments": {},
            "_meta": {"outlast/config": {"configurable": {"keys": [key]}}},
        }
        request_id = 7
        session.in_flight(request_id, "tools/call", params)

        async def started() -> str:
            runs = (await self.json("GET", "/v1/runs"))["runs"]
            mine = [
                r["id"]
                for r in runs
                if r["graph"] == SIGNALLED and r["metadata"].get("mcp") and r["status"] == "waiting"
            ]
            known = {s.run for s in self.sessions if s.run}
            fresh = [r for r in mine if r not in known]
            if not fresh:
                raise NotYet(runs)
            return str(fresh[0])

        run: str = await eventually(started, what="alice's MCP call's run waiting")
        session.run = run
        snap = await self.run_status(run, "waiting")
        ids = {
            "session": session.id,
            "thread": snap["thread_id"],
            "run": session.run,
            "lg_run": session.run,
            "wait": snap["wait"]["id"],
            "graph": SIGNALLED,
            "signal": key,
        }
        extra = {"session": session, "request_id": request_id}
        return [
            Obj("mcp-session", "mcp-session", ids, {}, extra),
            Obj("run:mcp-call", "mcp-session", ids, {}, extra),
        ]

    async def item(self) -> list[Obj]:
        namespace, key, value = ["alice", secret("ns")], secret("key"), secret("item")
        body = {"namespace": namespace, "key": key, "value": {"note": value}}
        await self.json("PUT", "/store/items", body, 204)
        ids = {"namespace": namespace[1], "key": key}
        return [Obj("item", "item", ids, {"value": value}, {"namespace": namespace})]

    async def cron(self) -> list[Obj]:
        topic, tag = secret("cron-topic"), secret("cron-tag")
        t = (await self.json("POST", "/threads", {"metadata": {"graph_id": GRAPH}}))["thread_id"]
        body = {
            "assistant_id": GRAPH,
            "schedule": "0 0 1 1 *",  # once a year: no tick while the matrix runs
            "input": {"topic": topic},
            "metadata": {"tag": tag},
        }
        cron = await self.json("POST", f"/threads/{t}/runs/crons", body)
        ids = {"cron": cron["cron_id"], "thread": t, "graph": GRAPH}
        return [Obj("cron", "cron", ids, {"topic": topic, "tag": tag})]

    async def assistant(self) -> list[Obj]:
        name, value, tag = secret("assistant"), secret("config"), secret("assistant-tag")
        body = {
            "graph_id": GRAPH,
            "name": name,
            "config": {"configurable": {"note": value}},
            "metadata": {"tag": tag},
        }
        made = await self.json("POST", "/assistants", body)
        assert self.c.mcp is not None
        tools = (await self.c.mcp.wire.send_raw_request("tools/list", None))["tools"]
        tool = next(t["name"] for t in tools if t["name"].startswith(name[:20]))
        ids = {"assistant": made["assistant_id"], "tool": tool, "graph": GRAPH}
        return [Obj("assistant", "assistant", ids, {"name": name, "value": value, "tag": tag})]

    async def webhook(self) -> list[Obj]:
        """A subscription (made with an Idempotency-Key) and one delivery, delivered."""
        # Its URL is no secret: bob sends the same body with her key, and lists what he made.
        url, key = f"{self.hooks_url}/hook", secret("hook-key")
        body = {"url": url, "events": ["run.waiting"]}
        made = await self.c.http.post(
            "/v1/webhooks", json=body, headers={**self.c.headers, "Idempotency-Key": key}
        )
        assert made.status_code == 201, made.text
        hook = made.json()
        run = (await self.json("POST", "/v1/runs", {"graph": GRAPH, "input": {}}, 202))["id"]

        async def delivered() -> dict[str, Any]:
            found = await self.json("GET", f"/v1/webhooks/{hook['id']}/deliveries")
            done = [d for d in found["deliveries"] if d["run_id"] == run]
            if not done or done[0]["status"] != "delivered":
                raise NotYet(found)
            result: dict[str, Any] = done[0]
            return result

        delivery: dict[str, Any] = await eventually(delivered, what="alice's webhook delivered")
        ids = {"webhook": hook["id"], "delivery": delivery["id"], "run": run}
        ids["idempotency_key"] = key
        return [Obj("webhook", "webhook", ids, {"secret": hook["secret"]}, {"body": body})]

    # -- alice's view of each kind ------------------------------------------------------

    async def snapshot(self, o: Obj) -> Any:
        kind = o.kind
        if kind.startswith("thread:"):
            t = o["thread"]
            thread = await self.json("GET", f"/threads/{t}")
            runs = await self.json("GET", f"/threads/{t}/runs")
            state = await self.json("GET", f"/threads/{t}/state")
            return {
                "thread": thread,
                "runs": [(r["run_id"], r["status"]) for r in runs],
                "checkpoint": state["checkpoint_id"],
            }
        if kind in ("run:done", "run:waiting", "run:signal", "task:a2a", "task:mcp"):
            return await self.json("GET", f"/v1/runs/{o['run']}")
        if kind == "run:mcp-call" or kind == "mcp-session":
            session: _RawSession = o.extra["session"]
            alive = await session.ping()
            return {"alive": alive, "run": await self.json("GET", f"/v1/runs/{o['run']}")}
        if kind == "item":
            return await self.json(
                "GET", "/store/items", namespace=".".join(o.extra["namespace"]), key=o["key"]
            )
        if kind == "cron":
            crons = await self.json("POST", "/runs/crons/search", {"thread_id": o["thread"]})
            return [c for c in crons if c["cron_id"] == o["cron"]]
        if kind == "assistant":
            a = o["assistant"]
            return {
                "assistant": await self.json("GET", f"/assistants/{a}"),
                "versions": await self.json("POST", f"/assistants/{a}/versions", {}),
            }
        if kind == "webhook":
            hook = await self.json("GET", f"/v1/webhooks/{o['webhook']}")
            found = await self.json("GET", f"/v1/webhooks/{o['webhook']}/deliveries")
            delivery = [d for d in found["deliveries"] if d["id"] == o["delivery"]]
            return {"webhook": hook, "delivery": delivery}
        if kind == "push-config":
            got = await a2a(
                self.c,
                GRAPH,
                "GetTaskPushNotificationConfig",
                {"taskId": o["run"], "id": o["config"]},
            )
            return got.data
        raise AssertionError(f"no snapshot for {kind}")

    async def close(self) -> None:
        for session in self.sessions:
            await session.close()


class _RawSession:
    """An MCP session over plain HTTP, so that its id and its requests' ids are known:
    what bob presents as his own in the session cells."""

    def __init__(self, c: Caller, session_id: str) -> None:
        self.c, self.id = c, session_id
        self.run: str | None = None
        self._calls: list[asyncio.Task[None]] = []
        self._next = 100

    @property
    def headers(self) -> dict[str, str]:
        return {
            **self.c.headers,
            "accept": "application/json, text/event-stream",
            "mcp-session-id": self.id,
            "mcp-protocol-version": MCP_VERSION,
        }

    @classmethod
    async def open(cls, c: Caller) -> _RawSession:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": MCP_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "alice", "version": "1"},
            },
        }
        headers = {**c.headers, "accept": "application/json, text/event-stream"}
        made = await c.http.post("/mcp", json=init, headers=headers)
        assert made.status_code == 200, made.text
        session = cls(c, made.headers["mcp-session-id"])
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await c.http.post("/mcp", json=done, headers=session.headers)).status_code == 202
        return session

    def in_flight(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

        async def hold() -> None:
            async with self.c.http.stream("POST", "/mcp", json=body, headers=self.headers) as r:
                async for _ in r.aiter_bytes():
                    pass

        self._calls.append(asyncio.create_task(hold()))

    async def ping(self) -> bool:
        self._next += 1
        body = {"jsonrpc": "2.0", "id": self._next, "method": "ping"}
        answer = await self.c.http.post("/mcp", json=body, headers=self.headers)
        return answer.status_code == 200 and '"result":{}' in answer.text

    async def close(self) -> None:
        for task in self._calls:
            task.cancel()
        await asyncio.gather(*self._calls, return_exceptions=True)
        with contextlib.suppress(httpx.HTTPError):
            await self.c.http.delete("/mcp", headers=self.headers)


GROUPS: dict[str, Callable[[Alice], Awaitable[list[Obj]]]] = {
    "thread:state": Alice.thread_state,
    "done": Alice.thread_done,
    "waiting": Alice.thread_waiting,
    "signal": Alice.run_signal,
    "a2a": Alice.a2a_task,
    "mcp-task": Alice.mcp_task,
    "mcp-session": Alice.mcp_session,
    "item": Alice.item,
    "cron": Alice.cron,
    "assistant": Alice.assistant,
    "webhook": Alice.webhook,
}

THREADS = ("thread:state", "thread:done", "thread:waiting")
RUNS = ("run:done", "run:waiting", "run:signal", "task:a2a", "task:mcp", "run:mcp-call")
KINDS = (*THREADS, *RUNS, "item", "cron", "assistant", "webhook", "push-config", "mcp-session")


# -- the probes ---------------------------------------------------------------------------

Call = Callable[[Caller, Obj], Awaitable[Answer]]


@dataclass(frozen=True)
class Probe:
    route: RouteKey
    kinds: tuple[str, ...]
    call: Call
    expect: Check
    writes: bool  # may change what it names: the object is read back after it
    label: str = ""

    def name(self) -> str:
        head = f"{self.route[0]} {self.route[1]}"
        return f"{head} ({self.label})" if self.label else head


Make = Callable[[Obj], Any]  # a request's body or params, from the object it names
NEW = "<new>"  # a path parameter that names a new thing of bob's, not alice's


def at(
    method: str,
    path: str,
    body: Make | None = None,
    *,
    params: Make | None = None,
    headers: Make | None = None,
    **names: str,
) -> Call:
    """``method path``, the path's parameters filled from the object's ids
    (``thread_id="thread"``: the object's ``thread``; ``NEW``: an id nobody has)."""

    async def go(c: Caller, o: Obj) -> Answer:
        filled = {param: new_id() if name == NEW else o[name] for param, name in names.items()}
        concrete = path.format(**filled)
        return await call(
            c,
            method,
            concrete,
            body=body(o) if body else None,
            params=params(o) if params else None,
            headers=headers(o) if headers else None,
        )

    return go


def rpc(method: str, params: Make) -> Call:
    """An A2A method on the endpoint of the graph the object's run ran."""

    async def go(c: Caller, o: Obj) -> Answer:
        return await a2a(c, o["graph"], method, params(o))

    return go


def mcp_call(method: str, params: Make) -> Call:
    async def go(c: Caller, o: Obj) -> Answer:
        return await mcp(c, method, params(o))

    return go


def cmd(method: str, params: Make, thread: Callable[[Obj], str] = lambda o: o["thread"]) -> Call:
    """A protocol v2 command over HTTP, on the object's thread."""

    async def go(c: Caller, o: Obj) -> Answer:
        return await command(c, thread(o), method, params(o))

    return go


def over_socket(frame: dict[str, Any] | None) -> Call:
    async def go(c: Caller, o: Obj) -> Answer:
        return await socket(c, o["thread"], frame)

    return go


def message(**fields: Any) -> dict[str, Any]:
    """An A2A 1.0 message of bob's (a new id each time: a retry is not what is probed)."""
    return {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "bob"}], **fields}


def message03(**fields: Any) -> dict[str, Any]:
    parts = [{"kind": "text", "text": "bob"}]
    return {"kind": "message", "messageId": new_id(), "role": "user", "parts": parts, **fields}


def in_context(make: Callable[..., dict[str, Any]]) -> Make:
    return lambda o: {"message": make(contextId=o["thread"])}


def follow_up(make: Callable[..., dict[str, Any]]) -> Make:
    return lambda o: {"message": make(taskId=o["run"], contextId=o["thread"])}


def equals(value: Any) -> Callable[[Any], bool]:
    return lambda d: bool(d == value)


READS_A2A = ("GetTask", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs")
READS_A2A_03 = (
    "tasks/get",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
)
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MCP_VERSION}


def probes(mode: str) -> list[Probe]:
    """The table: each route, the kinds of object it touches, how bob calls it, what he
    must get. ``mode``: ``keys`` (API keys) or ``auth`` (the app's ``auth.py``)."""
    table: list[Probe] = []

    def add(
        route: RouteKey,
        kinds: tuple[str, ...],
        fn: Call,
        expect: Check,
        *,
        writes: bool | None = None,
        label: str = "",
    ) -> None:
        """``writes``: by default, whatever is not a GET may change what it names."""
        table.append(
            Probe(route, kinds, fn, expect, route[0] != "GET" if writes is None else writes, label)
        )

    not_found = refused(404)
    # Another's thread id on /v1: "taken" (422, API keys), or not found (404, where an
    # auth.py's filter hides it); a new run on it is never made.
    taken = refused(404, 422)
    # the auth.py's store handler refuses another's namespace outright (403)
    store_refused = (403,) if mode == "auth" else ()
    no_body = None

    # -- /v1 ------------------------------------------------------------------------------
    add(
        ("POST", "/v1/runs"),
        THREADS,
        at(
            "POST",
            "/v1/runs",
            lambda o: {"graph": o["graph"], "thread_id": o["thread"], "input": {}},
        ),
        taken,
    )
    add(
        ("POST", "/v1/runs"),
        ("run:signal",),
        at(
            "POST",
            "/v1/runs",
            lambda o: o.extra["body"],
            headers=lambda o: {"Idempotency-Key": o["idempotency_key"]},
        ),
        refused(202, 422),
        label="alice's Idempotency-Key: bob's own run, or refused",
    )
    add(
        ("GET", "/v1/runs"),
        RUNS,
        at("GET", "/v1/runs"),
        listed(lambda d: isinstance(d.get("runs"), list), "a listing of bob's runs"),
    )
    add(
        ("GET", "/v1/runs"),
        THREADS,
        at("GET", "/v1/runs", params=lambda o: {"thread_id": o["thread"]}),
        listed(lambda d: d == {"runs": [], "next_cursor": None}, "no run"),
        label="by thread",
    )
    for method, path, body in [
        ("GET", "/v1/runs/{run_id}", no_body),
        ("GET", "/v1/runs/{run_id}/events", no_body),
        ("POST", "/v1/runs/{run_id}/stream-token", no_body),
        ("POST", "/v1/runs/{run_id}/cancel", lambda o: {"reason": "bob"}),
        ("GET", "/v1/runs/{run_id}/effects", no_body),
        ("GET", "/v1/runs/{run_id}/preserved", no_body),
        ("POST", "/v1/runs/{run_id}/input", lambda o: {"wait_id": o["wait"], "value": "bob"}),
    ]:
        add((method, path), RUNS, at(method, path, body, run_id="run"), not_found)
    add(
        ("GET", "/v1/runs/{run_id}/result"),
        RUNS,
        at("GET", "/v1/runs/{run_id}/result", params=lambda o: {"wait": 0}, run_id="run"),
        not_found,
    )
    add(
        ("POST", "/v1/signals/{key}"),
        ("run:signal", "run:mcp-call"),
        at("POST", "/v1/signals/{key}", lambda o: {"payload": "bob"}, key="signal"),
        listed(lambda d: isinstance(d.get("runs"), list), "the runs of bob's it woke"),
    )
    add(
        ("POST", "/v1/threads/{thread_id}/runs"),
        THREADS,
        at(
            "POST",
            "/v1/threads/{thread_id}/runs",
            lambda o: {"graph": o["graph"], "input": {}},
            thread_id="thread",
        ),
        taken,
    )
    for path in ("/v1/threads/{thread_id}/state", "/v1/threads/{thread_id}/history"):
        add(("GET", path), THREADS, at("GET", path, thread_id="thread"), not_found)
    add(
        ("POST", "/v1/webhooks"),
        ("webhook",),
        at(
            "POST",
            "/v1/webhooks",
            lambda o: o.extra["body"],
            headers=lambda o: {"Idempotency-Key": o["idempotency_key"]},
        ),
        refused(201, 422),
        label="alice's Idempotency-Key: bob's own subscription, or refused",
    )
    add(
        ("GET", "/v1/webhooks"),
        ("webhook",),
        at("GET", "/v1/webhooks"),
        listed(lambda d: isinstance(d.get("webhooks"), list), "a listing of bob's subscriptions"),
    )
    for method, path in [
        ("GET", "/v1/webhooks/{webhook_id}"),
        ("DELETE", "/v1/webhooks/{webhook_id}"),
        ("GET", "/v1/webhooks/{webhook_id}/deliveries"),
    ]:
        add((method, path), ("webhook",), at(method, path, webhook_id="webhook"), not_found)
    retry = "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry"
    add(
        ("POST", retry),
        ("webhook",),
        at("POST", retry, webhook_id="webhook", delivery_id="delivery"),
        not_found,
    )

    # -- the LangGraph face: threads --------------------------------------------------------
    add(
        ("POST", "/threads"),
        THREADS,
        at("POST", "/threads", lambda o: {"thread_id": o["thread"], "if_exists": "do_nothing"}),
        refused(409),
    )
    add(
        ("POST", "/threads/search"),
        THREADS,
        at("POST", "/threads/search", lambda o: {"ids": [o["thread"]]}),
        listed(lambda d: d == [], "no thread"),
    )
    add(
        ("POST", "/threads/count"),
        ("thread:state",),
        at("POST", "/threads/count", lambda o: {"metadata": {"tag": o.secrets["tag"]}}),
        listed(lambda d: d == 0, "a count of 0"),
    )
    add(
        ("POST", "/threads/prune"),
        THREADS,
        at("POST", "/threads/prune", lambda o: {"thread_ids": [o["thread"]]}),
        listed(lambda d: d == {"pruned_count": 0}, "nothing pruned"),
    )
    for method, path, body in [
        ("GET", "/threads/{thread_id}", no_body),
        ("PATCH", "/threads/{thread_id}", lambda o: {"metadata": {"bob": True}}),
        ("DELETE", "/threads/{thread_id}", no_body),
        ("GET", "/threads/{thread_id}/state", no_body),
        (
            "POST",
            "/threads/{thread_id}/state",
            lambda o: {"values": {"topic": "bob"}, "as_node": "think"},
        ),
        ("POST", "/threads/{thread_id}/history", lambda o: {}),
        ("GET", "/threads/{thread_id}/history", no_body),
        ("GET", "/threads/{thread_id}/stream", no_body),
        ("GET", "/threads/{thread_id}/runs", no_body),
        ("POST", "/threads/{thread_id}/stream/events", lambda o: {"channels": ["values"]}),
    ]:
        add((method, path), THREADS, at(method, path, body, thread_id="thread"), not_found)
    # a copy of a thread the caller cannot see is a 409, as of one that does not exist (as
    # on LangGraph's server): the same answer either way, so it says nothing of the thread
    add(
        ("POST", "/threads/{thread_id}/copy"),
        THREADS,
        at("POST", "/threads/{thread_id}/copy", no_body, thread_id="thread"),
        refused(409),
    )
    add(
        ("POST", "/threads/{thread_id}/state/checkpoint"),
        THREADS,
        at(
            "POST",
            "/threads/{thread_id}/state/checkpoint",
            lambda o: {"checkpoint": {"checkpoint_id": o["checkpoint"]}},
            thread_id="thread",
        ),
        not_found,
        writes=False,  # a read with a body
    )
    at_checkpoint = "/threads/{thread_id}/state/{checkpoint_id}"
    add(
        ("GET", at_checkpoint),
        THREADS,
        at("GET", at_checkpoint, thread_id="thread", checkpoint_id="checkpoint"),
        not_found,
    )

    # -- the LangGraph face: runs -----------------------------------------------------------
    def new_input(o: Obj) -> dict[str, Any]:
        return {"assistant_id": GRAPH, "input": {"topic": "bob"}, "if_not_exists": "create"}

    for suffix in ("", "/stream", "/wait"):
        path = "/threads/{thread_id}/runs" + suffix
        add(
            ("POST", path),
            THREADS,
            at("POST", path, new_input, thread_id="thread"),
            refused(404, 409, 422),
        )
        add(
            ("POST", path),
            ("run:waiting",),
            at(
                "POST",
                path,
                lambda o: {"assistant_id": GRAPH, "command": {"resume": "bob"}},
                thread_id="thread",
            ),
            not_found,
            label="resume alice's interrupt",
        )
        add(
            ("POST", path),
            ("assistant",),
            at(
                "POST",
                path,
                lambda o: {**new_input(o), "assistant_id": o["assistant"]},
                thread_id=NEW,
            ),
            refused(404, 422),
            label="bob's new thread, alice's assistant",
        )
        stateless = "/runs" + suffix
        add(
            ("POST", stateless),
            ("assistant",),
            at("POST", stateless, lambda o: {"assistant_id": o["assistant"], "input": {}}),
            refused(404, 422),
        )
        add(
            ("POST", stateless),
            ("thread:state",),
            at(
                "POST",
                stateless,
                lambda o: {
                    "assistant_id": GRAPH,
                    "input": {"topic": "bob"},
                    "checkpoint": {"thread_id": o["thread"], "checkpoint_id": o["checkpoint"]},
                },
            ),
            anything,
            label="from alice's checkpoint: bob's own thread",
        )
    for method, path in [
        ("GET", "/threads/{thread_id}/runs/{run_id}"),
        ("GET", "/threads/{thread_id}/runs/{run_id}/join"),
        ("GET", "/threads/{thread_id}/runs/{run_id}/stream"),
        ("POST", "/threads/{thread_id}/runs/{run_id}/cancel"),
        ("DELETE", "/threads/{thread_id}/runs/{run_id}"),
    ]:
        add((method, path), RUNS, at(method, path, thread_id="thread", run_id="lg_run"), not_found)
    add(
        ("POST", "/runs/cancel"),
        RUNS,
        at("POST", "/runs/cancel", lambda o: {"thread_id": o["thread"], "run_ids": [o["lg_run"]]}),
        not_found,
    )
    add(
        ("POST", "/runs/cancel"),
        ("run:waiting", "run:signal"),
        at("POST", "/runs/cancel", lambda o: {"status": "all"}),
        refused(204),
        label="every run of bob's",
    )

    # -- the LangGraph face: crons ----------------------------------------------------------
    def cron_body(o: Obj) -> dict[str, Any]:
        return {"assistant_id": GRAPH, "schedule": "0 0 1 1 *", "input": {"topic": "bob"}}

    add(
        ("POST", "/threads/{thread_id}/runs/crons"),
        (*THREADS, "cron"),
        at("POST", "/threads/{thread_id}/runs/crons", cron_body, thread_id="thread"),
        not_found,
    )
    add(
        ("POST", "/runs/crons"),
        ("assistant",),
        at("POST", "/runs/crons", lambda o: {**cron_body(o), "assistant_id": o["assistant"]}),
        refused(404, 422),
    )
    add(
        ("POST", "/runs/crons/search"),
        ("cron",),
        at("POST", "/runs/crons/search", lambda o: {"thread_id": o["thread"]}),
        listed(lambda d: d == [], "no cron"),
    )
    add(
        ("POST", "/runs/crons/count"),
        ("cron",),
        at("POST", "/runs/crons/count", lambda o: {"thread_id": o["thread"]}),
        listed(lambda d: d == 0, "a count of 0"),
    )
    add(
        ("PATCH", "/runs/crons/{cron_id}"),
        ("cron",),
        at("PATCH", "/runs/crons/{cron_id}", lambda o: {"enabled": False}, cron_id="cron"),
        not_found,
    )
    add(
        ("DELETE", "/runs/crons/{cron_id}"),
        ("cron",),
        at("DELETE", "/runs/crons/{cron_id}", cron_id="cron"),
        not_found,
    )

    # -- the LangGraph face: assistants -----------------------------------------------------
    add(
        ("POST", "/assistants"),
        ("assistant",),
        at(
            "POST",
            "/assistants",
            lambda o: {
                "graph_id": GRAPH,
                "assistant_id": o["assistant"],
                "if_exists": "do_nothing",
            },
        ),
        refused(403, 404, 409),
        label="alice's assistant_id",
    )
    for path, empty in (("/assistants/search", []), ("/assistants/count", 0)):
        add(
            ("POST", path),
            ("assistant",),
            at("POST", path, lambda o: {"metadata": {"tag": o.secrets["tag"]}}),
            listed(equals(empty), f"{empty!r}"),
        )
    for method, path, body, writes in [
        ("GET", "/assistants/{assistant_id}", no_body, False),
        ("PATCH", "/assistants/{assistant_id}", lambda o: {"metadata": {"bob": True}}, True),
        ("DELETE", "/assistants/{assistant_id}", no_body, True),
        ("POST", "/assistants/{assistant_id}/latest", lambda o: {"version": 1}, True),
        ("GET", "/assistants/{assistant_id}/graph", no_body, False),
        ("GET", "/assistants/{assistant_id}/schemas", no_body, False),
        ("GET", "/assistants/{assistant_id}/subgraphs", no_body, False),
    ]:
        add(
            (method, path),
            ("assistant",),
            at(method, path, body, assistant_id="assistant"),
            not_found,
            writes=writes,
        )
    # a version list the app's assistants.read filter empties is [], as LangGraph answers
    # (without auth.py another principal's assistant is not found)
    versions = "/assistants/{assistant_id}/versions"
    add(
        ("POST", versions),
        ("assistant",),
        at("POST", versions, lambda o: {}, assistant_id="assistant"),
        listed(equals([]), "[] or not found", 404),
    )
    subgraph = "/assistants/{assistant_id}/subgraphs/{namespace}"
    add(
        ("GET", subgraph),
        ("assistant",),
        at("GET", subgraph, assistant_id="assistant", namespace="graph"),
        not_found,
    )

    # -- the LangGraph face: the item store --------------------------------------------------
    # Reads first: bob's own write (in his namespace, under her labels) is what they would
    # find after it.
    def item(o: Obj) -> dict[str, Any]:
        return {"namespace": list(o.extra["namespace"]), "key": o["key"]}

    add(
        ("GET", "/store/items"),
        ("item",),
        at(
            "GET",
            "/store/items",
            params=lambda o: {"namespace": ".".join(item(o)["namespace"]), "key": o["key"]},
        ),
        listed(lambda d: d is None, "null (no such item)", *store_refused),
    )
    add(
        ("POST", "/store/items/search"),
        ("item",),
        at("POST", "/store/items/search", lambda o: {"namespace_prefix": item(o)["namespace"]}),
        listed(lambda d: d == {"items": []}, "no item", *store_refused),
    )
    add(
        ("POST", "/store/namespaces"),
        ("item",),
        at("POST", "/store/namespaces", lambda o: {"prefix": item(o)["namespace"][:1]}),
        listed(lambda d: d == {"namespaces": []}, "no namespace", *store_refused),
    )
    add(
        ("PUT", "/store/items"),
        ("item",),
        at("PUT", "/store/items", lambda o: {**item(o), "value": {"bob": 1}}),
        refused(204, *store_refused),
        label="bob's write lands in his own namespace, or is refused",
    )
    add(
        ("DELETE", "/store/items"),
        ("item",),
        at("DELETE", "/store/items", item),
        refused(204, *store_refused),
        label="deletes nothing of alice's",
    )

    # -- protocol v2 ---------------------------------------------------------------------------
    add(
        ("COMMAND", "run.start"),
        THREADS,
        cmd("run.start", lambda o: {"assistant_id": GRAPH, "input": {"topic": "bob"}}),
        command_refused("no_such_run", "invalid_argument"),
    )
    add(
        ("COMMAND", "run.start"),
        ("assistant",),
        cmd(
            "run.start", lambda o: {"assistant_id": o["assistant"], "input": {}}, lambda o: new_id()
        ),
        command_refused("invalid_argument", "no_such_run"),
        label="bob's new thread, alice's assistant",
    )
    add(
        ("COMMAND", "input.respond"),
        ("run:waiting",),
        cmd("input.respond", lambda o: {"interrupt_id": o["interrupt"], "response": "bob"}),
        command_refused("no_such_run", "no_such_interrupt"),
    )
    add(
        ("COMMAND", "input.inject"),
        THREADS,
        cmd("input.inject", lambda o: {"message": {"role": "user", "content": "bob"}}),
        command_refused("not_supported", "no_such_run"),
    )
    add(
        ("COMMAND", "state.get"),
        THREADS,
        cmd("state.get", lambda o: {}),
        command_empty({"values": {}}),
        writes=False,
    )
    add(
        ("COMMAND", "state.listCheckpoints"),
        THREADS,
        cmd("state.listCheckpoints", lambda o: {}),
        command_empty({"checkpoints": []}),
        writes=False,
    )
    add(
        ("COMMAND", "state.fork"),
        THREADS,
        cmd("state.fork", lambda o: {"checkpoint_id": o["checkpoint"], "input": {"topic": "bob"}}),
        command_refused("no_such_checkpoint", "no_such_run"),
    )
    add(
        ("COMMAND", "agent.getTree"),
        THREADS,
        cmd("agent.getTree", lambda o: {}),
        command_refused("no_such_run"),
        writes=False,
    )
    add(
        ("COMMAND", "agent.getTree"),
        ("run:waiting", "run:done"),
        cmd("agent.getTree", lambda o: {"run_id": o["lg_run"]}),
        command_refused("no_such_run"),
        writes=False,
        label="alice's run",
    )
    add(
        ("WEBSOCKET", "/threads/{thread_id}/stream/events"),
        THREADS,
        over_socket(None),
        socket_refused,
        writes=False,
    )
    for name in sorted(WEBSOCKET_ONLY):
        params: dict[str, Any] = {"subscription_id": "sub-1"}
        if name == "subscription.subscribe":
            params = {"channels": ["values"]}
        add(
            ("COMMAND", name),
            THREADS,
            over_socket({"id": 1, "method": name, "params": params}),
            socket_refused,
            writes=False,
            label="over the thread's WebSocket",
        )

    # -- A2A 1.0 and 0.3 ----------------------------------------------------------------------
    for name, make in (
        ("SendMessage", message),
        ("SendStreamingMessage", message),
        ("message/send", message03),
        ("message/stream", message03),
    ):
        add(
            ("A2A", name),
            THREADS,
            rpc(name, in_context(make)),
            rpc_refused,
            label="alice's context",
        )
        add(
            ("A2A", name),
            RUNS,
            rpc(name, follow_up(make)),
            rpc_refused,
            label="a follow-up to alice's task",
        )
        if "/" not in name:
            add(
                ("A2A", name),
                ("task:a2a",),
                rpc(name, lambda o: {"message": message(messageId=o["message"])}),
                anything,
                label="alice's messageId: bob's own task",
            )

    def config_id(o: Obj) -> str:
        return o.ids.get("config", o["run"])

    bobs_url = "https://example.com/bob"
    task_params: list[tuple[str, Make]] = [
        ("GetTask", lambda o: {"id": o["run"]}),
        ("CancelTask", lambda o: {"id": o["run"]}),
        ("SubscribeToTask", lambda o: {"id": o["run"]}),
        ("CreateTaskPushNotificationConfig", lambda o: {"taskId": o["run"], "url": bobs_url}),
        ("GetTaskPushNotificationConfig", lambda o: {"taskId": o["run"], "id": config_id(o)}),
        ("ListTaskPushNotificationConfigs", lambda o: {"taskId": o["run"]}),
        ("DeleteTaskPushNotificationConfig", lambda o: {"taskId": o["run"], "id": config_id(o)}),
        ("tasks/get", lambda o: {"id": o["run"]}),
        ("tasks/cancel", lambda o: {"id": o["run"]}),
        ("tasks/resubscribe", lambda o: {"id": o["run"]}),
        (
            "tasks/pushNotificationConfig/set",
            lambda o: {"taskId": o["run"], "pushNotificationConfig": {"url": bobs_url}},
        ),
        (
            "tasks/pushNotificationConfig/get",
            lambda o: {"id": o["run"], "pushNotificationConfigId": config_id(o)},
        ),
        ("tasks/pushNotificationConfig/list", lambda o: {"id": o["run"]}),
        (
            "tasks/pushNotificationConfig/delete",
            lambda o: {"id": o["run"], "pushNotificationConfigId": config_id(o)},
        ),
    ]
    for name, params_of in task_params:
        add(
            ("A2A", name),
            (*RUNS, "push-config"),
            rpc(name, params_of),
            rpc_refused,
            writes=name not in (*READS_A2A, *READS_A2A_03),
        )
    add(
        ("A2A", "ListTasks"),
        THREADS,
        rpc("ListTasks", lambda o: {"contextId": o["thread"]}),
        listed(lambda d: not d["result"].get("tasks"), "no task"),
        writes=False,
    )
    add(
        ("A2A", "ListTasks"),
        ("task:a2a",),
        rpc("ListTasks", lambda o: {}),
        listed(lambda d: "result" in d, "a listing of bob's tasks"),
        writes=False,
        label="every task of bob's",
    )

    # -- MCP ------------------------------------------------------------------------------------
    add(
        GRAPH_TOOL,
        THREADS,
        mcp_call(
            "tools/call",
            lambda o: {
                "name": o["graph"],
                "arguments": {"topic": "bob"},
                "_meta": {"outlast/thread_id": o["thread"]},
            },
        ),
        rpc_refused,
        label="on alice's thread",
    )
    add(
        GRAPH_TOOL,
        ("task:mcp",),
        mcp_call(
            "tools/call",
            lambda o: {
                "name": o["graph"],
                "arguments": {"topic": "bob"},
                "task": {"ttl": 60_000},
                "_meta": {"outlast/idempotency_key": o["idempotency_key"]},
            },
        ),
        anything,
        label="alice's idempotency key: bob's own task",
    )
    add(
        ASSISTANT_TOOL,
        ("assistant",),
        mcp_call("tools/call", lambda o: {"name": o["tool"], "arguments": {}}),
        rpc_refused,
    )
    add(
        ("MCP tool", "outlast_answer"),
        RUNS,
        mcp_call(
            "tools/call",
            lambda o: {
                "name": "outlast_answer",
                "arguments": {"run_id": o["run"], "answer": "bob"},
            },
        ),
        rpc_refused,
    )
    add(
        ("MCP tool", "outlast_result"),
        RUNS,
        mcp_call(
            "tools/call", lambda o: {"name": "outlast_result", "arguments": {"run_id": o["run"]}}
        ),
        rpc_refused,
        writes=False,
    )
    add(
        ("MCP", "tools/list"),
        ("assistant",),
        mcp_call("tools/list", lambda o: {}),
        listed(lambda d: "tools" in d, "bob's tools"),
        writes=False,
    )
    for name in ("tasks/get", "tasks/result", "tasks/cancel"):
        add(
            ("MCP", name),
            RUNS,
            mcp_call(name, lambda o: {"taskId": o["run"]}),
            rpc_refused,
            writes=name == "tasks/cancel",
        )
    add(
        ("MCP", "tasks/list"),
        ("task:mcp", "run:mcp-call"),
        mcp_call("tasks/list", lambda o: {}),
        listed(lambda d: "tasks" in d, "bob's tasks"),
        writes=False,
    )

    async def cancelled(c: Caller, o: Obj) -> Answer:
        return await mcp_notify(c, "notifications/cancelled", {"requestId": o.extra["request_id"]})

    add(
        ("MCP", "notifications/cancelled"),
        ("run:mcp-call",),
        cancelled,
        anything,
        writes=True,
        label="alice's in-flight request id",
    )
    for method in ("POST", "GET", "DELETE"):
        ping = (
            (lambda o: {"jsonrpc": "2.0", "id": 1, "method": "ping"}) if method == "POST" else None
        )
        add(
            (method, "/mcp"),
            ("mcp-session",),
            at(
                method,
                "/mcp",
                ping,
                headers=lambda o: {**MCP_HEADERS, "mcp-session-id": o["session"]},
            ),
            not_found,
            label="alice's session",
        )
    return table


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Report:
    mode: str
    routes: int = 0
    public: int = 0
    kinds: int = 0
    principals: int = 0
    cells: int = 0
    failures: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # every cell's answer, for reading
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"isolation matrix ({self.mode}): {self.routes} routes ({self.public} public) × "
            f"{self.kinds} kinds of object × {self.principals} principals other than alice "
            f"= {self.cells} cells, {len(self.failures)} failing, in {self.seconds:.1f} s"
        )


class Matrix:
    """Alice's objects, and each probe's cells: bob's call and a caller's with no
    credentials at all, on every object of each kind the probe touches."""

    def __init__(self, alice: Alice, bob: Caller, nobody: Caller, mode: str) -> None:
        self.alice, self.mode = alice, mode
        # who calls, and what they must get instead of the probe's own answer (None)
        self.principals: list[tuple[Caller, Check | None]] = [
            (bob, None),
            (nobody, unauthenticated),
        ]
        self.objects: dict[str, Obj] = {}
        self.before: dict[str, Any] = {}
        self.retired: list[Obj] = []  # objects a failing cell changed, made again since
        self.given: dict[str, set[str]] = {}  # by caller: what of alice's he has sent
        self.report = Report(mode)

    async def make(self, groups: Iterable[str]) -> None:
        made = await asyncio.gather(*(GROUPS[g](self.alice) for g in groups))
        for objs in made:
            for o in objs:
                self.objects[o.kind] = o
                self.before[o.kind] = await self.alice.snapshot(o)

    def tokens(self) -> dict[str, str]:
        """Every string of alice's the others must not read unless they sent it."""
        found: dict[str, str] = {"alice": "alice's principal"}
        for o in [*self.retired, *self.objects.values()]:
            found.update(o.tokens())
        return found

    def leaks(self, who: Caller, answer: Answer) -> list[str]:
        """What of alice's the answer holds that the caller has not sent, in this request
        or an earlier one (what he sent he knows: a thread id he named, the body of hers
        he replayed with her Idempotency-Key)."""
        tokens = self.tokens()
        given = self.given.setdefault(who.name, set())
        given.update(t for t in tokens if t in answer.sent)
        return sorted(
            f"{what} ({token})"
            for token, what in tokens.items()
            if token in answer.text and token not in given
        )

    async def cell(self, who: Caller, probe: Probe, o: Obj, expect: Check) -> None:
        where = f"{probe.name()} × {o.kind} as {who.name}"
        self.report.cells += 1
        try:
            answer = await probe.call(who, o)
        except Exception as exc:  # a call that could not be made: the cell's failure
            self.report.failures.append(f"{where}: the call raised {exc!r}")
            return
        self.report.answers.append(f"{where}: {answer}")
        wrong = expect(answer)
        if wrong is None and answer.status is not None and answer.status >= 500:
            wrong = f"answered {answer}"
        if wrong is not None:
            self.report.failures.append(f"{where}: {wrong}")
        leaked = self.leaks(who, answer)
        if leaked:
            self.report.failures.append(f"{where}: leaked {', '.join(leaked)}")
        if probe.writes:
            await self.unchanged(where, [o])

    async def unchanged(self, where: str, objs: list[Obj]) -> None:
        """Alice's objects as she saw them before; a changed one is reported and made
        again (with what was made with it: a thread and its run), so that the cells
        after this one start from what they expect."""
        changed: set[str] = set()
        for o in objs:
            try:
                now = await self.alice.snapshot(o)
            except AssertionError as exc:  # alice cannot read it back (deleted, say)
                now = f"unreadable to alice: {exc}"
            if now != self.before[o.kind]:
                self.report.failures.append(
                    f"{where}: changed alice's {o.kind}: {_diff(self.before[o.kind], now)}"
                )
                changed.add(o.group)
        if changed:
            self.retired += [o for o in self.objects.values() if o.group in changed]
            await self.make(changed)

    async def run(self, table: list[Probe], served: set[RouteKey]) -> Report:
        started = time.monotonic()
        self.report.routes = len(served)
        self.report.public = len(served & set(PUBLIC))
        self.report.kinds = len(KINDS)
        self.report.principals = len(self.principals)
        await self.public_cells()
        for probe in table:
            for kind in probe.kinds:
                for who, instead in self.principals:
                    await self.cell(who, probe, self.objects[kind], instead or probe.expect)
        await self.unchanged("after every cell", list(self.objects.values()))
        self.report.seconds = time.monotonic() - started
        return self.report

    async def public_cells(self) -> None:
        """Each public route once per caller: an answer (some ask for credentials, see
        ``api/auth.py``'s ``PUBLIC``), and nothing of alice's in it."""
        for who, _ in self.principals:
            for (method, path), _ in sorted(PUBLIC.items()):
                if method == "A2A":
                    answer = await a2a(who, GRAPH, path, {})
                elif method == "MCP":
                    answer = await mcp(who, path, {})
                else:
                    concrete = path.replace("{graph_id}", GRAPH).replace("{path}", "console.js")
                    answer = await call(who, method, concrete)
                self.report.cells += 1
                where = f"{method} {path} (public) as {who.name}"
                self.report.answers.append(f"{where}: {answer}")
                allowed = (200, 401) if who.token == "" else (200,)
                if answer.status is not None and answer.status not in allowed:
                    self.report.failures.append(f"{where}: answered {answer}")
                leaked = self.leaks(who, answer)
                if leaked:
                    self.report.failures.append(f"{where}: leaked {', '.join(leaked)}")


def _diff(before: Any, after: Any, at: str = "") -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if before.get(key) != after.get(key):
                return _diff(before.get(key), after.get(key), f"{at}.{key}")
    was, now = (json.dumps(v, default=str)[:120] for v in (before, after))
    return f"{at or 'it'}: {was} → {now}"


@contextlib.asynccontextmanager
async def caller(
    name: str, token: str, url: str, peer: Peer | None = None
) -> AsyncIterator[Caller]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield Caller(name, token, url, http, peer)
