"""The differential scenarios: what clients of LangGraph's documentation do, through
``langgraph_sdk``, against the app in ``app/``. Each is a coroutine of a ``Probe`` that
records what its client saw (``probe.py``); the same scenario runs against every server.

Scenarios run concurrently on one server, so none depends on what another made: the
ones that search or count put their own tag (``{"scenario": <name>}``) in the metadata
of what they create and filter by it, and a search without filters keeps, of what it
got, only what the scenario itself created (in the order the server gave it).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.differential.probe import Probe

Scenario = Callable[[Probe], Awaitable[None]]


@dataclass(frozen=True)
class Entry:
    name: str
    group: str
    run: Scenario


SCENARIOS: dict[str, Entry] = {}


def scenario(group: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        name = fn.__name__
        assert name not in SCENARIOS, name
        SCENARIOS[name] = Entry(name, group, fn)
        return fn

    return register


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def ids(items: Any, key: str) -> list[Any]:
    return [item[key] for item in items or []]


def only(known: list[str], key: str) -> Callable[[Any], Any]:
    """A view of a listing: the items this scenario made, in the server's order."""

    def view(items: Any) -> Any:
        return [item for item in items if item.get(key) in known]

    return view


def run_view(run: Any) -> Any:
    """A Run as a client acts on it: which run, of which thread and assistant, in what
    status, how it was asked for. (``runs_create_then_join`` records one whole.)"""
    kwargs = run.get("kwargs") or {}
    asked = ("input", "command", "stream_mode", "interrupt_before", "interrupt_after")
    return {
        **{k: run.get(k) for k in ("run_id", "thread_id", "assistant_id", "status")},
        "multitask_strategy": run.get("multitask_strategy"),
        "kwargs": {k: kwargs.get(k) for k in asked},
    }


def runs_view(runs: Any) -> Any:
    return [run_view(r) for r in runs]


def state_view(state: Any) -> Any:
    """A thread's state as a client acts on it: its values, what runs next, its tasks and
    their interrupts, the interrupts. (``threads_state_after_a_chat`` records one whole.)"""
    tasks = [
        {"name": t.get("name"), "interrupts": t.get("interrupts"), "error": t.get("error")}
        for t in state.get("tasks") or []
    ]
    interrupts = [
        {"id": i.get("id"), "value": i.get("value")} for i in state.get("interrupts") or []
    ]
    return {
        "values": state.get("values"),
        "next": state.get("next"),
        "tasks": tasks,
        "interrupts": interrupts,
        "checkpoint": state.get("checkpoint_id"),
    }


def legacy_view(part: Any) -> Any:
    """A legacy ``messages`` event: of ``messages/metadata`` the message id and its
    node (the rest is tracing context), the others whole."""
    if part.event.startswith("messages/metadata") and isinstance(part.data, dict):
        return {
            k: {"node": (v.get("metadata") or {}).get("langgraph_node")}
            for k, v in part.data.items()
        }
    return part.data


async def until_running(client: Any, thread_id: str, run_id: str) -> None:
    """Until a worker has the run (not recorded: when is the server's business)."""
    for _ in range(600):
        if (await client.runs.get(thread_id, run_id))["status"] == "running":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never started")


def message_view(part: Any) -> Any:
    """A ``messages`` event: the message, and of its metadata the node it came from
    (the rest of it is the server's tracing context: versions, hosts, plans)."""
    data = part.data
    if isinstance(data, list) and len(data) == 2 and isinstance(data[1], dict):
        return [data[0], {"langgraph_node": data[1].get("langgraph_node")}]
    return data


# -- the auth tutorial: authentication -------------------------------------------------------


@scenario("auth")
async def auth_without_a_header(p: Probe) -> None:
    """The tutorial's ``assert authorization`` with no header at all."""
    await p.call("search", p.client(authorization="").threads.search())


@scenario("auth")
async def auth_bearer_without_token(p: Probe) -> None:
    """``scheme, token = authorization.split()`` on ``Bearer``: a ValueError."""
    await p.call("search", p.client(authorization="Bearer").threads.search(), detail=True)


@scenario("auth")
async def auth_wrong_scheme(p: Probe) -> None:
    """``assert scheme.lower() == "bearer"`` on a Basic header."""
    await p.call("search", p.client(authorization="Basic abc").threads.search())


@scenario("auth")
async def auth_unknown_token(p: Probe) -> None:
    c = p.client(authorization="Bearer nobody-token")
    await p.call("search", c.threads.search(), detail=True)
    await p.call("create", c.threads.create(), detail=True)


@scenario("auth")
async def auth_suspended_account(p: Probe) -> None:
    c = p.client(authorization="Bearer suspended-token")
    await p.call("search", c.threads.search(), detail=True)


# -- the auth tutorial: resources are private to their owner -------------------------------


@scenario("auth")
async def auth_threads_are_private(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    thread = await p.call("create", alice.threads.create(metadata={"scenario": "private"}))
    assert thread
    tid = thread["thread_id"]
    await p.call("owner reads", alice.threads.get(tid))
    await p.call("other reads", bob.threads.get(tid))
    await p.call("other state", bob.threads.get_state(tid))
    await p.call("other updates", bob.threads.update(tid, metadata={"stolen": True}))
    await p.call("other deletes", bob.threads.delete(tid))
    mine = {"scenario": "private"}
    await p.call("owner searches", alice.threads.search(metadata=mine), only([tid], "thread_id"))
    await p.call("other searches", bob.threads.search(metadata=mine))
    await p.call("other counts", bob.threads.count(metadata=mine))
    await p.call("admin reads", p.admin.threads.get(tid))
    await p.call("owner deletes", alice.threads.delete(tid))
    await p.call("gone", alice.threads.get(tid))


@scenario("auth")
async def auth_runs_on_others_threads(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    thread = await p.call("create", alice.threads.create())
    assert thread
    tid = thread["thread_id"]
    await p.call("owner runs", alice.runs.wait(tid, "chat", input=say("mine")))
    await p.call("other runs", bob.runs.wait(tid, "chat", input=say("theirs")))
    await p.call("other lists runs", bob.runs.list(tid))
    await p.call("other history", bob.threads.get_history(tid))
    runs = await alice.runs.list(tid)
    await p.call("other reads run", bob.runs.get(tid, runs[0]["run_id"]))
    await p.call("owner lists runs", alice.runs.list(tid), runs_view)


@scenario("auth")
async def auth_user_thread_search_sees_own(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    tag = {"scenario": "auth_user_thread_search_sees_own"}
    a = await alice.threads.create(metadata=tag)
    b = await bob.threads.create(metadata=tag)
    made = [a["thread_id"], b["thread_id"]]
    await p.call("alice", alice.threads.search(metadata=tag), only(made, "thread_id"))
    await p.call("bob", bob.threads.search(metadata=tag), only(made, "thread_id"))
    await p.call("admin", p.admin.threads.search(metadata=tag), only(made, "thread_id"))
    await p.call("alice counts", alice.threads.count(metadata=tag))
    await p.call("admin counts", p.admin.threads.count(metadata=tag))


@scenario("auth")
async def auth_resume_answer_refused(p: Probe) -> None:
    """A resume is a run: ``threads.create_run`` sees its command and may refuse it."""
    alice = p.client("user1")
    thread = await alice.threads.create()
    tid = thread["thread_id"]
    await p.call("ask", alice.runs.wait(tid, "hitl", input={"topic": "cats"}))
    await p.call(
        "forbidden answer",
        alice.runs.wait(tid, "hitl", command={"resume": "forbidden answer"}),
        detail=True,
    )
    await p.call("still asking", alice.threads.get(tid), lambda t: t["status"])
    await p.call("allowed answer", alice.runs.wait(tid, "hitl", command={"resume": "yes"}))


@scenario("auth")
async def auth_assistants_search_by_user(p: Probe) -> None:
    """The tutorial's ``@auth.on``, ``value.setdefault("metadata", {}).update(filters)``,
    on an assistants search and count."""
    alice = p.client("user1")
    await p.call("search", alice.assistants.search(graph_id="writer"))
    await p.call("count", alice.assistants.count(graph_id="writer"))


@scenario("auth")
async def auth_assistants_owned(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    made = await p.call(
        "create", alice.assistants.create("chat", name="alice's bot", metadata={"x": 1})
    )
    assert made
    aid = made["assistant_id"]
    await p.call("owner reads", alice.assistants.get(aid))
    await p.call("other reads", bob.assistants.get(aid))
    await p.call("other updates", bob.assistants.update(aid, name="bob's now"))
    await p.call("owner deletes", alice.assistants.delete(aid), detail=True)
    await p.call("admin deletes", p.admin.assistants.delete(aid))
    await p.call("gone", alice.assistants.get(aid))


@scenario("auth")
async def auth_crons_admin_only(p: Probe) -> None:
    alice = p.client("user1")
    thread = await p.admin.threads.create()
    tid = thread["thread_id"]
    await p.call("user creates", alice.crons.create_for_thread(tid, "chat", schedule="0 0 * * *"))
    await p.call("user searches", alice.crons.search(thread_id=tid))
    cron = await p.call(
        "admin creates", p.admin.crons.create_for_thread(tid, "chat", schedule="0 0 * * *")
    )
    assert cron
    await p.call("user deletes", alice.crons.delete(cron["cron_id"]))
    await p.call("admin deletes", p.admin.crons.delete(cron["cron_id"]))


# -- the auth tutorial: the store, each user in their namespace, an admin anywhere ----------


@scenario("auth")
async def store_own_namespace(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    ns = ["user1", "notes"]
    await p.call("put own", alice.store.put_item(ns, "n1", {"text": "hi"}))
    await p.call("get own", alice.store.get_item(ns, "n1"))
    await p.call("get other's", bob.store.get_item(ns, "n1"))
    await p.call("put other's", bob.store.put_item(ns, "n2", {"text": "x"}))
    await p.call("search own", alice.store.search_items(ns))
    await p.call("search other's", bob.store.search_items(ns))
    await p.call("delete other's", bob.store.delete_item(ns, "n1"))
    await p.call("delete own", alice.store.delete_item(ns, "n1"))
    await p.call("deleted", alice.store.get_item(ns, "n1"))


@scenario("auth")
async def store_admin_anywhere(p: Probe) -> None:
    alice = p.client("user1")
    ns = ["user1", "from-admin"]
    await p.call("admin puts", p.admin.store.put_item(ns, "k", {"v": 1}))
    await p.call("owner reads", alice.store.get_item(ns, "k"))
    await p.call("admin searches", p.admin.store.search_items(ns, filter={"v": 1}))
    await p.call(
        "namespaces", p.admin.store.list_namespaces(prefix=["user1", "from-admin"], max_depth=2)
    )
    await p.call("admin deletes", p.admin.store.delete_item(ns, "k"))


@scenario("auth")
async def store_item_missing_and_ttl_shape(p: Probe) -> None:
    await p.call("missing", p.admin.store.get_item(["nobody", "here"], "nothing"))
    await p.call("put", p.admin.store.put_item(["shared", "docs"], "a", {"n": 1}, index=False))
    await p.call("put again", p.admin.store.put_item(["shared", "docs"], "a", {"n": 2}))
    await p.call("get", p.admin.store.get_item(["shared", "docs"], "a"))
    await p.call("search limit", p.admin.store.search_items(["shared"], limit=1, offset=0))


# -- custom routes, middleware, lifespan ----------------------------------------------------


@scenario("http")
async def route_plain(p: Probe) -> None:
    await p.http("hello", "GET", "/hello", headers=["x-custom-header"])
    await p.http("post echo", "POST", "/echo", json={"a": [1, 2]}, headers=["x-custom-header"])
    await p.http("not a route", "GET", "/nowhere", headers=["x-custom-header"])


@scenario("http")
async def route_lifespan_state(p: Probe) -> None:
    await p.http("greeting", "GET", "/greeting")


@scenario("http")
async def route_auth(p: Probe) -> None:
    """``enable_custom_route_auth``: the app's routes pass through ``authenticate``."""
    await p.http("no token", "GET", "/hello", who=None)
    await p.http("user", "GET", "/hello", who="user1")


@scenario("http")
async def route_error_status(p: Probe) -> None:
    await p.http("teapot", "GET", "/teapot", headers=["x-custom-header"])


@scenario("http")
async def route_middleware_on_langgraph_routes(p: Probe) -> None:
    """The app's middleware wraps LangGraph's own routes too."""
    await p.http("ok", "GET", "/ok", who=None, headers=["x-custom-header"])
    await p.http(
        "threads search",
        "POST",
        "/threads/search",
        json={"limit": 0},
        headers=["x-custom-header"],
    )


# -- crons ----------------------------------------------------------------------------------


@scenario("crons")
async def crons_on_a_thread(p: Probe) -> None:
    thread = await p.admin.threads.create()
    tid = thread["thread_id"]
    cron = await p.call(
        "create",
        p.admin.crons.create_for_thread(
            tid, "chat", schedule="0 9 * * 1", input=say("weekly"), metadata={"k": "v"}
        ),
        lambda c: {k: c.get(k) for k in ("cron_id", "thread_id", "schedule", "metadata")},
    )
    assert cron
    p.record("payload", cron.get("payload"))
    await p.call(
        "search",
        p.admin.crons.search(thread_id=tid),
        lambda cs: [{k: c.get(k) for k in ("cron_id", "thread_id", "schedule")} for c in cs],
    )
    await p.call("count", p.admin.crons.count(thread_id=tid))
    await p.call("delete", p.admin.crons.delete(cron["cron_id"]))
    await p.call("delete again", p.admin.crons.delete(cron["cron_id"]))
    await p.call("count after", p.admin.crons.count(thread_id=tid))


@scenario("crons")
async def crons_stateless(p: Probe) -> None:
    assistant = await p.admin.assistants.create("chat", metadata={"scenario": "crons_stateless"})
    aid = assistant["assistant_id"]
    cron = await p.call(
        "create",
        p.admin.crons.create(aid, schedule="*/30 * * * *", input=say("tick")),
        lambda c: {k: c.get(k) for k in ("assistant_id", "thread_id", "schedule")},
    )
    assert cron
    await p.call(
        "search select",
        p.admin.crons.search(assistant_id=aid, select=["cron_id", "schedule"]),
    )
    await p.call("count", p.admin.crons.count(assistant_id=aid))
    await p.call("delete", p.admin.crons.delete(cron["cron_id"]))


@scenario("crons")
async def crons_bad_schedule(p: Probe) -> None:
    thread = await p.admin.threads.create()
    await p.call(
        "not a schedule",
        p.admin.crons.create_for_thread(thread["thread_id"], "chat", schedule="every day"),
    )
    await p.call("unknown assistant", p.admin.crons.create("nope", schedule="0 0 * * *"))


# -- interrupts and Command (the human-in-the-loop how-to) ---------------------------------


@scenario("hitl")
async def hitl_wait_then_resume(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("ask", c.runs.wait(tid, "hitl", input={"topic": "cats"}))
    await p.call("thread", c.threads.get(tid))
    await p.call("state", c.threads.get_state(tid), state_view)
    await p.call("runs", c.runs.list(tid), runs_view)
    await p.call("resume", c.runs.wait(tid, "hitl", command={"resume": "yes"}))
    await p.call("thread after", c.threads.get(tid))
    await p.call("state after", c.threads.get_state(tid), state_view)
    await p.call("runs after", c.runs.list(tid), runs_view)


@scenario("hitl")
async def hitl_command_goto(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.wait(tid, "hitl", input={"topic": "dogs"})
    await p.call("say no", c.runs.wait(tid, "hitl", command={"resume": "no"}))
    await p.call("history", c.threads.get_history(tid), lambda h: [s["next"] for s in h])


@scenario("hitl")
async def hitl_stream_interrupt_and_resume(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.stream("ask", c.runs.stream(tid, "hitl", input={"topic": "x"}, stream_mode="updates"))
    await p.stream(
        "resume",
        c.runs.stream(tid, "hitl", command={"resume": "ok"}, stream_mode=["values", "updates"]),
    )


@scenario("hitl")
async def hitl_resume_nothing_to_resume(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("resume idle thread", c.runs.wait(tid, "hitl", command={"resume": "yes"}))


@scenario("hitl")
async def hitl_new_input_while_interrupted(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.wait(tid, "hitl", input={"topic": "first"})
    await p.call("new input", c.runs.wait(tid, "hitl", input={"topic": "second"}))
    await p.call("state", c.threads.get_state(tid), lambda s: [s["values"], s["next"]])


@scenario("hitl")
async def hitl_static_breakpoint(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call(
        "until before last",
        c.runs.wait(tid, "nested", input={"trail": []}, interrupt_before=["last"]),
    )
    await p.call("thread", c.threads.get(tid), lambda t: [t["status"], t["values"]])
    await p.call("state", c.threads.get_state(tid), lambda s: [s["values"], s["next"]])
    await p.call("go on", c.runs.wait(tid, "nested", input=None))


@scenario("hitl")
async def hitl_update_state_as_node(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.wait(tid, "nested", input={"trail": ["start"]})
    await p.call(
        "update",
        c.threads.update_state(tid, {"trail": ["by hand"]}, as_node="last"),
        lambda r: sorted(r),
    )
    await p.call("state", c.threads.get_state(tid), lambda s: [s["values"], s["next"]])
    await p.call("history", c.threads.get_history(tid, limit=3), lambda h: [s["values"] for s in h])


# -- stream modes ---------------------------------------------------------------------------


@scenario("streams")
async def stream_values(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream("values", p.admin.runs.stream(tid, "nested", input={"trail": []}))


@scenario("streams")
async def stream_updates(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "updates", p.admin.runs.stream(tid, "nested", input={"trail": []}, stream_mode="updates")
    )


@scenario("streams")
async def stream_messages_tuple_of_a_model(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    got = await p.stream(
        "messages-tuple",
        p.admin.runs.stream(tid, "chat", input=say("one two"), stream_mode="messages-tuple"),
        message_view,
    )
    # what a message event's metadata says, apart (the other steps show its node only)
    metadata = next((g.data[1] for g in got if g.event == "messages"), {})
    p.record("metadata keys", dict.fromkeys(metadata, True))


@scenario("streams")
async def stream_messages_tuple_without_a_model(p: Probe) -> None:
    """A node returns a message without calling a model (issue 43, (8))."""
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "messages-tuple",
        p.admin.runs.stream(tid, "canned", input=say("hi"), stream_mode="messages-tuple"),
        message_view,
    )


@scenario("streams")
async def stream_messages_legacy(p: Probe) -> None:
    """The legacy ``messages`` mode: ``messages/metadata``, then the message so far
    (``messages/partial``), or whole (``messages/complete``)."""
    tid = (await p.admin.threads.create())["thread_id"]
    for graph, text in (("chat", "legacy mode"), ("canned", "hi"), ("agent", "weather in Rome")):
        await p.stream(
            graph,
            p.admin.runs.stream(
                tid if graph == "chat" else None, graph, input=say(text), stream_mode="messages"
            ),
            legacy_view,
        )


@scenario("streams")
async def stream_custom(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "custom", p.admin.runs.stream(tid, "writer", input={}, stream_mode=["custom", "updates"])
    )


@scenario("streams")
async def stream_debug(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "debug",
        p.admin.runs.stream(tid, "nested", input={"trail": []}, stream_mode="debug"),
        lambda part: (
            [part.data.get("type"), part.data.get("step")]
            if isinstance(part.data, dict)
            else part.data
        ),
    )


@scenario("streams")
async def stream_tasks_and_checkpoints(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "tasks",
        p.admin.runs.stream(tid, "nested", input={"trail": []}, stream_mode="tasks"),
        lambda part: sorted(part.data) if isinstance(part.data, dict) else part.data,
    )
    await p.stream(
        "checkpoints",
        p.admin.runs.stream(tid, "nested", input={"trail": []}, stream_mode="checkpoints"),
        lambda part: (
            [part.data.get("values"), part.data.get("next")]
            if isinstance(part.data, dict)
            else part.data
        ),
    )


@scenario("streams")
async def stream_events(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "events",
        p.admin.runs.stream(tid, "canned", input=say("hi"), stream_mode="events"),
        lambda part: (
            [part.data.get("event"), part.data.get("name")]
            if isinstance(part.data, dict)
            else part.data
        ),
    )


@scenario("streams")
async def stream_subgraphs(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "subgraphs",
        p.admin.runs.stream(
            tid, "nested", input={"trail": []}, stream_mode=["updates"], stream_subgraphs=True
        ),
    )


@scenario("streams")
async def stream_tool_calling_agent(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream(
        "agent",
        p.admin.runs.stream(
            tid, "agent", input=say("weather in Paris"), stream_mode=["updates", "messages-tuple"]
        ),
        message_view,
    )


@scenario("streams")
async def stream_a_failing_run(p: Probe) -> None:
    tid = (await p.admin.threads.create())["thread_id"]
    await p.stream("fails", p.admin.runs.stream(tid, "fails", input={}, stream_mode="updates"))
    await p.call("thread", p.admin.threads.get(tid), lambda t: [t["status"], t.get("error")])


@scenario("streams")
async def stream_stateless(p: Probe) -> None:
    await p.stream(
        "stateless",
        p.admin.runs.stream(None, "nested", input={"trail": []}, stream_mode=["values"]),
    )


@scenario("streams")
async def stream_join_after_create(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    run = await c.runs.create(tid, "nested", input={"trail": []}, stream_mode=["values"])
    await p.call("join", c.runs.join(tid, run["run_id"]))
    await p.stream("join the finished run's stream", c.runs.join_stream(tid, run["run_id"]))


# -- runs ------------------------------------------------------------------------------------


@scenario("runs")
async def runs_create_then_join(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    run = await p.call(
        "create",
        c.runs.create(tid, "slow", input={}, config={"configurable": {"delay": 0.3}}),
        run_view,
    )
    assert run
    # the rest of the Run, apart: what a server puts in it beyond what was asked
    kwargs = dict(run.get("kwargs") or {})
    p.record("create: config", kwargs.pop("config", None))
    p.record(
        "create: context and durability",
        {k: kwargs.get(k) for k in ("context", "durability", "resumable", "checkpoint_during")},
    )
    p.record("create: metadata", run.get("metadata"))
    p.record("create: keys", dict.fromkeys(run, True))
    await p.call("join", c.runs.join(tid, run["run_id"]))
    await p.call("get", c.runs.get(tid, run["run_id"]), run_view)
    await p.call("list", c.runs.list(tid), runs_view)
    await p.call("list select", c.runs.list(tid, select=["run_id", "status"]))


@scenario("runs")
async def runs_wait_calls_the_model_plainly(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("wait", c.runs.wait(tid, "tells", input=say("plain")))
    await p.call("stateless wait", c.runs.wait(None, "tells", input=say("plain too")))


@scenario("runs")
async def runs_wait_on_a_failing_run(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("wait", c.runs.wait(tid, "fails", input={}))
    await p.call("wait no raise", c.runs.wait(tid, "fails", input={}, raise_error=False))
    await p.call("runs", c.runs.list(tid), lambda rs: [r["status"] for r in rs])


@scenario("runs")
async def runs_cancel(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    run = await c.runs.create(tid, "slow", input={}, config={"configurable": {"delay": 5}})
    await until_running(c, tid, run["run_id"])
    await p.call("cancel", c.runs.cancel(tid, run["run_id"], wait=True))
    await p.call("run", c.runs.get(tid, run["run_id"]), lambda r: r["status"])
    await p.call("thread", c.threads.get(tid), lambda t: t["status"])


@scenario("runs")
async def runs_multitask_reject(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    first = await c.runs.create(tid, "slow", input={}, config={"configurable": {"delay": 1.5}})
    await p.call(
        "second",
        c.runs.create(tid, "slow", input={}, multitask_strategy="reject"),
        detail=False,
    )
    await p.call("first ends", c.runs.join(tid, first["run_id"]))


@scenario("runs")
async def runs_multitask_enqueue(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.create(tid, "slow", input={}, config={"configurable": {"delay": 0.5}})
    second = await p.call(
        "enqueued",
        c.runs.create(tid, "nested", input={"trail": []}, multitask_strategy="enqueue"),
        lambda r: r["status"],
    )
    assert second
    await p.call("second ends", c.runs.join(tid, second["run_id"]))


@scenario("runs")
async def runs_delete(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.wait(tid, "nested", input={"trail": []})
    run = (await c.runs.list(tid))[0]
    await p.call("delete", c.runs.delete(tid, run["run_id"]))
    await p.call("get deleted", c.runs.get(tid, run["run_id"]))
    await p.call("list", c.runs.list(tid), runs_view)


@scenario("runs")
async def runs_store_through_the_graph(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("run", c.runs.wait(tid, "memory", input={"trail": ["a"]}))
    await p.call("item", c.store.get_item(["memories", "graph"], "last"), lambda i: i["value"])


# -- threads: search, count, select, extract, copy, prune ----------------------------------


@scenario("threads")
async def threads_search_with_filters(p: Probe) -> None:
    c = p.admin
    tag = {"scenario": "threads_search_with_filters"}
    made = []
    for color in ("red", "blue", "red"):
        t = await c.threads.create(metadata={**tag, "color": color})
        made.append(t["thread_id"])
    await c.runs.wait(made[0], "nested", input={"trail": ["x"]})
    await p.call("by metadata", c.threads.search(metadata={**tag, "color": "red"}))
    await p.call("by status", c.threads.search(metadata=tag, status="idle"), lambda ts: len(ts))
    await p.call(
        "sorted",
        c.threads.search(metadata=tag, sort_by="created_at", sort_order="asc"),
        lambda ts: [t["metadata"]["color"] for t in ts],
    )
    await p.call("paged", c.threads.search(metadata=tag, limit=1, offset=1), lambda ts: len(ts))
    await p.call(
        "select",
        c.threads.search(metadata={**tag, "color": "blue"}, select=["thread_id", "metadata"]),
    )
    await p.call("count", c.threads.count(metadata=tag))
    await p.call("count red", c.threads.count(metadata={**tag, "color": "red"}))
    # last: the reference answers it 500 and closes the connection
    await p.call(
        "by values",
        c.threads.search(
            metadata=tag, values={"trail": ["x", "first", "inner_a", "inner_b", "last"]}
        ),
    )


@scenario("threads")
async def threads_search_without_filters(p: Probe) -> None:
    c = p.admin
    made = [(await c.threads.create())["thread_id"] for _ in range(2)]
    await p.call("search", c.threads.search(limit=1000), only(made, "thread_id"))
    await p.call(
        "search asc", c.threads.search(limit=1000, sort_order="asc"), only(made, "thread_id")
    )


@scenario("threads")
async def threads_search_extract(p: Probe) -> None:
    c = p.admin
    tag = {"scenario": "threads_search_extract"}
    tid = (await c.threads.create(metadata=tag))["thread_id"]
    await c.runs.wait(tid, "chat", input=say("extract me"))
    await p.call(
        "extract",
        c.threads.search(
            metadata=tag,
            extract={"last": "values.messages[-1].content", "first": "values.messages[0].content"},
            select=["thread_id"],
        ),
    )


@scenario("threads")
async def threads_copy(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create(metadata={"k": "v"}))["thread_id"]
    await c.runs.wait(tid, "nested", input={"trail": ["orig"]})
    copied = await p.call("copy", c.threads.copy(tid))
    assert copied
    cid = copied["thread_id"]
    await p.call("copy state", c.threads.get_state(cid), lambda s: [s["values"], s["next"]])
    await p.call("copy history", c.threads.get_history(cid), lambda h: len(h))
    await p.call("copy runs", c.runs.list(cid), runs_view)
    await p.call("copy of nothing", c.threads.copy("00000000-0000-0000-0000-000000000000"))


@scenario("threads")
async def threads_copy_of_another_user(p: Probe) -> None:
    alice, bob = p.client("user1"), p.client("user2")
    tid = (await alice.threads.create())["thread_id"]
    await p.call("other copies", bob.threads.copy(tid))
    await p.call("owner copies", alice.threads.copy(tid), lambda t: t["metadata"])


@scenario("threads")
async def threads_prune(p: Probe) -> None:
    c = p.admin
    a = (await c.threads.create())["thread_id"]
    b = (await c.threads.create())["thread_id"]
    await c.runs.wait(a, "nested", input={"trail": []})
    await c.runs.wait(a, "nested", input={"trail": []})
    await p.call("keep latest", c.threads.prune([a], strategy="keep_latest"))
    await p.call("history after", c.threads.get_history(a), lambda h: len(h))
    await p.call("state after", c.threads.get_state(a), lambda s: s["values"])
    await p.call("delete", c.threads.prune([b]))
    await p.call("deleted", c.threads.get(b))


@scenario("threads")
async def threads_create_if_exists(p: Probe) -> None:
    c = p.admin
    tid = "6a6f8d2e-5c5b-4c45-9a51-0d7d6a2f5f01"
    await p.call("create with id", c.threads.create(thread_id=tid, metadata={"n": 1}))
    await p.call("again, raise", c.threads.create(thread_id=tid, if_exists="raise"))
    await p.call(
        "again, do nothing",
        c.threads.create(thread_id=tid, metadata={"n": 2}, if_exists="do_nothing"),
    )


@scenario("threads")
async def threads_update_and_delete(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create(metadata={"a": 1}))["thread_id"]
    await p.call("update", c.threads.update(tid, metadata={"b": 2}))
    await p.call("get", c.threads.get(tid))
    await p.call("delete", c.threads.delete(tid))
    await p.call("get deleted", c.threads.get(tid))
    await p.call("delete again", c.threads.delete(tid))


@scenario("threads")
async def threads_state_of_a_new_thread(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("state", c.threads.get_state(tid))
    await p.call("history", c.threads.get_history(tid))
    await p.call("runs", c.runs.list(tid), runs_view)


@scenario("threads")
async def threads_state_after_a_chat(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await c.runs.wait(tid, "chat", input=say("state"))
    await p.call("thread", c.threads.get(tid))
    await p.call("state", c.threads.get_state(tid))


# -- assistants -----------------------------------------------------------------------------


@scenario("assistants")
async def assistants_system(p: Probe) -> None:
    c = p.admin
    await p.call(
        "search by graph",
        c.assistants.search(graph_id="hitl", metadata={"created_by": "system"}),
    )
    await p.call(
        "count by graph", c.assistants.count(graph_id="hitl", metadata={"created_by": "system"})
    )
    found = await c.assistants.search(graph_id="nested", metadata={"created_by": "system"})
    aid = found[0]["assistant_id"]
    await p.call("graph", c.assistants.get_graph(aid))
    await p.call("graph xray", c.assistants.get_graph(aid, xray=True))
    await p.call("schemas", c.assistants.get_schemas(aid), lambda s: sorted(s))
    await p.call("subgraphs", c.assistants.get_subgraphs(aid), lambda s: sorted(s))


@scenario("assistants")
async def assistants_create_update_versions(p: Probe) -> None:
    c = p.admin
    made = await p.call(
        "create",
        c.assistants.create(
            "chat", config={"configurable": {"x": 1}}, metadata={"team": "a"}, name="bot"
        ),
    )
    assert made
    aid = made["assistant_id"]
    await p.call("update", c.assistants.update(aid, metadata={"team": "b"}, name="bot 2"))
    await p.call("versions", c.assistants.get_versions(aid))
    await p.call("set latest", c.assistants.set_latest(aid, 1))
    await p.call("get", c.assistants.get(aid))
    await p.call("delete", c.assistants.delete(aid))
    await p.call("get deleted", c.assistants.get(aid))


@scenario("assistants")
async def assistants_search_filters_select(p: Probe) -> None:
    c = p.admin
    tag = {"scenario": "assistants_search_filters_select"}
    made = []
    for name in ("one", "two"):
        a = await c.assistants.create("hitl", metadata=tag, name=name)
        made.append(a["assistant_id"])
    await p.call(
        "by metadata", c.assistants.search(metadata=tag), lambda xs: [x["name"] for x in xs]
    )
    await p.call(
        "by name", c.assistants.search(metadata=tag, name="two"), lambda xs: [x["name"] for x in xs]
    )
    await p.call(
        "select",
        c.assistants.search(
            metadata=tag, select=["assistant_id", "name"], sort_by="name", sort_order="asc"
        ),
    )
    await p.call("count", c.assistants.count(metadata=tag))
    await p.call("unfiltered", c.assistants.search(limit=1000), only(made, "assistant_id"))


@scenario("assistants")
async def assistants_if_exists(p: Probe) -> None:
    c = p.admin
    aid = "9d1c8f66-7a2b-4f1e-8c3d-2b6e4f5a7c10"
    await p.call("create", c.assistants.create("chat", assistant_id=aid, name="fixed"))
    await p.call("again, raise", c.assistants.create("chat", assistant_id=aid, if_exists="raise"))
    await p.call(
        "again, do nothing",
        c.assistants.create("chat", assistant_id=aid, name="other", if_exists="do_nothing"),
        lambda a: a["name"],
    )


# -- error statuses -------------------------------------------------------------------------


MISSING = "00000000-0000-0000-0000-0000000000aa"


@scenario("errors")
async def errors_not_found(p: Probe) -> None:
    c = p.admin
    await p.call("thread", c.threads.get(MISSING))
    await p.call("thread state", c.threads.get_state(MISSING))
    await p.call("assistant", c.assistants.get(MISSING))
    await p.call("run on missing thread", c.runs.create(MISSING, "chat", input=say("x")))
    tid = (await c.threads.create())["thread_id"]
    await p.call("run", c.runs.get(tid, MISSING))
    await p.call("cancel missing run", c.runs.cancel(tid, MISSING))
    await p.call("cron", c.crons.delete(MISSING))


@scenario("errors")
async def errors_unknown_graph(p: Probe) -> None:
    c = p.admin
    tid = (await c.threads.create())["thread_id"]
    await p.call("run on unknown assistant", c.runs.create(tid, "no-such-graph", input={}))
    await p.call("assistant of unknown graph", c.assistants.create("no-such-graph"))


@scenario("errors")
async def errors_invalid_bodies(p: Probe) -> None:
    await p.http("run without assistant", "POST", "/runs/wait", json={"input": {}})
    await p.http("thread search bad limit", "POST", "/threads/search", json={"limit": "many"})
    await p.http("not json", "POST", "/threads", content=b"{not json", headers=[])
    await p.http("bad thread id", "GET", "/threads/not-a-uuid")


# -- LangGraph's JS SDK ------------------------------------------------------------------------

JS = Path(__file__).parent.parent / "js"  # tests/js: its node_modules has the JS SDK


@scenario("js")
async def js_sdk_client(p: Probe) -> None:
    """The JS SDK's ``Client``: a tool-calling agent streamed with values and
    messages-tuple, an interrupt and its resume, a result, a failure, errors
    (``js_client.mjs``). Without Node or ``tests/js/node_modules`` (``npm ci`` there,
    which the JS tests do) it records that, on every server alike."""
    node = shutil.which("node")
    sdk = JS / "node_modules" / "@langchain" / "langgraph-sdk" / "dist" / "index.js"
    if node is None or not sdk.exists():
        p.record("js", {"skipped": "no node, or no npm ci in tests/js"})
        return
    script = Path(__file__).parent / "js_client.mjs"
    proc = await asyncio.create_subprocess_exec(
        node,
        str(script),
        str(JS),
        p.url,
        "admin-token",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    if proc.returncode != 0:
        p.record("js", {"exit": proc.returncode, "stderr": err.decode()[-2000:]})
        return
    for step, seen in json.loads(out).items():
        p.forget_ids()  # each step apart: the ids the script met are not all shown
        if isinstance(seen, list):
            p.record_events(step, [[e, d] for e, d in seen])
        else:
            p.record(step, seen)
