"""Graph factories as LangGraph's server calls them (issue 29): built per use with the
use's config and a ``ServerRuntime``, through the real ``langgraph_sdk`` client; a graph
that fails to load is reported, and the others serve on."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import InternalServerError

from outlast.errors import GraphLoadError
from outlast.graph.factories import Access
from outlast.graph.registry import GraphRegistry
from outlast.store import Store
from tests.harness import ALICE, KEYS, Server, eventually, make_settings, serve

FACTORIES = textwrap.dedent(
    """
    from __future__ import annotations

    import asyncio
    import contextlib
    from typing import TYPE_CHECKING

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    if TYPE_CHECKING:  # as LangGraph's own examples: names the server cannot evaluate
        from langchain_core.runnables import RunnableConfig
        from langgraph_sdk.runtime import ServerRuntime

    CALLS: list[dict] = []
    OWN_SAVER = InMemorySaver()  # what the factory compiles with; outlast must replace it


    class S(TypedDict, total=False):
        text: str
        flavour: str
        access: str
        execution: bool
        user: str


    def build(flavour: str, **extra) -> StateGraph:
        def node(state: S) -> S:
            return {"text": (state.get("text") or "") + " " + flavour, "flavour": flavour, **extra}

        b = StateGraph(S)
        b.add_node("make_" + flavour, node)  # the topology follows the config
        b.add_edge(START, "make_" + flavour)
        b.add_edge("make_" + flavour, END)
        return b


    async def make_async(config: RunnableConfig, runtime: ServerRuntime):
        await asyncio.sleep(0)
        flavour = config["configurable"].get("flavour", "plain")
        ert = runtime.execution_runtime
        user = runtime.user.identity if runtime.user else ""
        CALLS.append({
            "graph": "async", "access": runtime.access_context, "flavour": flavour,
            "user": user, "context": ert.context if ert else None,
            "configurable": dict(config["configurable"]),
        })
        extra = {"access": runtime.access_context, "execution": ert is not None, "user": user}
        return build(flavour, **extra).compile(checkpointer=OWN_SAVER)


    def make_sync(config):
        flavour = config["configurable"].get("flavour", "plain")
        config["configurable"]["flavour"] = "changed by the factory"  # its copy only
        CALLS.append({"graph": "sync", "flavour": flavour})
        return build(flavour)  # a StateGraph: compiled by the server


    @contextlib.asynccontextmanager
    async def make_managed(runtime: ServerRuntime):
        task = asyncio.current_task()
        CALLS.append({"graph": "managed", "event": "enter", "access": runtime.access_context})
        try:
            yield build("managed").compile()
        finally:
            CALLS.append({
                "graph": "managed", "event": "exit", "access": runtime.access_context,
                "same_task": asyncio.current_task() is task,
            })


    def make_asking(config: RunnableConfig):
        flavour = config["configurable"]["flavour"]
        CALLS.append({"graph": "asking", "flavour": flavour})

        def ask(state: S) -> S:
            return {"text": flavour + " for " + interrupt("who?")}

        b = StateGraph(S)
        b.add_node("ask_" + flavour, ask)
        b.add_edge(START, "ask_" + flavour)
        b.add_edge("ask_" + flavour, END)
        return b


    def make_raising(config):
        raise ValueError("no graph for this config")
    """
)

GRAPHS = {
    "async_factory": "./factories.py:make_async",
    "sync_factory": "./factories.py:make_sync",
    "managed": "./factories.py:make_managed",
    "asking": "./factories.py:make_asking",
    "raising": "./factories.py:make_raising",
    "broken": "./broken.py:graph",
    "steps": "outlast.graph.example:graph",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "factories.py").write_text(FACTORIES)
    (tmp_path / "broken.py").write_text("import a_module_that_is_not_there\n")
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": GRAPHS}))
    return tmp_path


def loaded(path: Path) -> Any:
    """The module the server loaded from ``path`` (what its factories recorded)."""
    return next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == str(path))


def calls(project: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = loaded(project / "factories.py").CALLS
    return found


@asynccontextmanager
async def served(store: Store, project: Path) -> AsyncIterator[tuple[Server, LangGraphClient]]:
    settings = make_settings(graphs_file=project / "langgraph.json", api_keys=KEYS)
    async with serve(store, settings) as srv:
        client = srv.sdk(api_key=ALICE, timeout=30)
        try:
            yield srv, client
        finally:
            await client.aclose()


async def test_an_async_factory_builds_each_run_its_graph_from_its_config(
    store: Store, project: Path
) -> None:
    async with served(store, project) as (_, client):
        mint = (await client.threads.create())["thread_id"]
        lime = (await client.threads.create())["thread_id"]
        got_mint = await client.runs.wait(
            mint,
            "async_factory",
            input={"text": "hi"},
            config={"configurable": {"flavour": "mint"}},
        )
        got_lime = await client.runs.wait(
            lime,
            "async_factory",
            input={"text": "hi"},
            config={"configurable": {"flavour": "lime"}},
        )
        assert got_mint == {
            "text": "hi mint",
            "flavour": "mint",
            "access": "threads.create_run",
            "execution": True,
            "user": "alice",
        }
        assert got_lime["text"] == "hi lime"
        runs = [c for c in calls(project) if c["access"] == "threads.create_run"]
        assert [c["flavour"] for c in runs] == ["mint", "lime"]
        assert runs[0]["configurable"]["thread_id"] == mint

        # the run's context reaches the execution runtime
        await client.runs.wait(mint, "async_factory", input={}, context={"tone": "dry"})
        assert calls(project)[-1]["context"] == {"tone": "dry"}

        # the factory's graph ran on outlast's saver, not the one it was compiled with
        module_saver = loaded(project / "factories.py").OWN_SAVER
        assert isinstance(module_saver, InMemorySaver) and not module_saver.storage
        saved = await store.checkpointer().aget_tuple({"configurable": {"thread_id": lime}})
        assert saved is not None and saved.checkpoint["channel_values"]["text"] == "hi lime"
        assert saved.metadata.get("run_id")


async def test_a_thread_read_and_update_build_the_graph_of_the_threads_run(
    store: Store, project: Path
) -> None:
    async with served(store, project) as (_, client):
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(
            tid, "async_factory", input={"text": "a"}, config={"configurable": {"flavour": "fig"}}
        )
        state = await client.threads.get_state(tid)
        assert state["values"]["text"] == "a fig"
        last = calls(project)[-1]
        assert (last["access"], last["flavour"], last["user"]) == ("threads.read", "fig", "alice")
        assert last["context"] is None and last["configurable"]["thread_id"] == tid
        await client.threads.update_state(tid, {"text": "edited"}, as_node="make_fig")
        assert calls(project)[-1]["access"] == "threads.update"
        assert (await client.threads.get_state(tid))["values"]["text"] == "edited"


async def test_a_schema_read_is_not_a_run(store: Store, project: Path) -> None:
    async with served(store, project) as (_, client):
        schemas = await client.assistants.get_schemas("async_factory")
        assert "text" in schemas["state_schema"]["properties"]
        last = calls(project)[-1]
        assert (last["access"], last["context"], last["user"]) == ("assistants.read", None, "alice")
        assert last["configurable"]["graph_id"] == "async_factory"
        # an assistant's config is what its drawing is built from
        made = await client.assistants.create(
            "async_factory", config={"configurable": {"flavour": "plum"}}
        )
        drawn = await client.assistants.get_graph(made["assistant_id"])
        assert "make_plum" in {n["id"] for n in drawn["nodes"]}
        assert calls(project)[-1]["access"] == "assistants.read"


async def test_a_sync_factory_of_config_alone(store: Store, project: Path) -> None:
    async with served(store, project) as (_, client):
        tid = (await client.threads.create())["thread_id"]
        got = await client.runs.wait(
            tid, "sync_factory", input={"text": "x"}, config={"configurable": {"flavour": "oak"}}
        )
        assert got == {"text": "x oak", "flavour": "oak"}
        run = (await client.runs.list(tid))[0]
        # what the factory did to its config is not the run's
        assert run["kwargs"]["config"]["configurable"]["flavour"] == "oak"


async def test_a_context_manager_factory_is_open_for_the_run(store: Store, project: Path) -> None:
    async with served(store, project) as (_, client):
        tid = (await client.threads.create())["thread_id"]
        got = await client.runs.wait(tid, "managed", input={"text": "m"})
        assert got == {"text": "m managed", "flavour": "managed"}

        def closed() -> list[dict[str, Any]]:
            return [c for c in calls(project) if c["graph"] == "managed"]

        seen = await eventually(lambda: len(closed()) == 2 and closed(), what="the exit")
        assert [(c["event"], c["access"]) for c in seen] == [
            ("enter", "threads.create_run"),
            ("exit", "threads.create_run"),
        ]
        assert seen[1]["same_task"]  # as a cancel scope (anyio's) needs


async def test_a_run_resumed_after_a_wait_is_rebuilt_from_its_config(
    store: Store, project: Path
) -> None:
    async with served(store, project) as (_, client):
        tid = (await client.threads.create())["thread_id"]
        config = {"configurable": {"flavour": "tea"}}
        paused = await client.runs.wait(tid, "asking", input={}, config=config)
        assert paused["__interrupt__"][0]["value"] == "who?"
        got = await client.runs.wait(tid, "asking", command={"resume": "Ada"})
        assert got["text"] == "tea for Ada"
        # each attempt built its graph from the run's config: the resume's too
        builds = [c["flavour"] for c in calls(project) if c["graph"] == "asking"]
        assert builds[0] == "tea" and set(builds) == {"tea"} and len(builds) >= 2


async def test_a_graph_that_fails_to_load_is_reported_and_the_others_serve(
    store: Store, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="outlast.graph.registry")
    async with served(store, project) as (srv, client):
        assert "a_module_that_is_not_there" in caplog.text  # in the log at start
        ready = (await srv.client.get("/readyz")).json()
        assert list(ready["graph_errors"]) == ["broken"]

        found = await client.assistants.search(graph_id="broken")
        assert len(found) == 1
        error = found[0]["metadata"]["load_error"]
        assert "could not be loaded" in error and "a_module_that_is_not_there" in error
        assert found[0]["description"] == f"Not loaded: {error}"
        assert "load_error" not in (await client.assistants.get("steps"))["metadata"]
        for read in (client.assistants.get_schemas, client.assistants.get_graph):
            with pytest.raises(InternalServerError) as refused:
                await read("broken")
            assert "a_module_that_is_not_there" in refused.value.response.text

        tid = (await client.threads.create())["thread_id"]
        with pytest.raises(Exception, match=r"GraphLoadError: .*a_module_that_is_not_there"):
            await client.runs.wait(tid, "broken", input={})
        assert (await client.threads.get(tid))["status"] == "error"
        with pytest.raises(Exception, match="its factory raised ValueError: no graph for this"):
            await client.runs.wait(tid, "raising", input={})
        # the thread, its graph broken, is still listed
        assert tid in {t["thread_id"] for t in await client.threads.search()}

        other = (await client.threads.create())["thread_id"]
        done = await client.runs.wait(other, "steps", input={})
        assert done["steps"] == ["plan", "gather", "draft", "review", "finish"]


# -- how a factory is called --------------------------------------------------------------


SIGNATURES = textwrap.dedent(
    """
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    SEEN = []

    class S(TypedDict, total=False):
        x: int

    def graph():
        b = StateGraph(S)
        b.add_node("inc", lambda s: {"x": s.get("x", 0) + 1})
        b.add_edge(START, "inc")
        b.add_edge("inc", END)
        return b.compile()

    def bare():
        SEEN.append(("bare",))
        return graph()

    def runtime_only(runtime):
        SEEN.append(("runtime_only", runtime.access_context))
        return graph()

    def swapped(rt: "ServerRuntime", cfg: "RunnableConfig"):
        SEEN.append(("swapped", rt.access_context, cfg["configurable"]["k"]))
        return graph()

    def positional(a, b, /):
        SEEN.append(("positional", a["configurable"]["k"], b.access_context))
        return graph()

    def with_default(config, extra=7):
        SEEN.append(("with_default", extra))
        return graph()

    def too_many(a, b, c):
        return graph()

    def keyword_unknown(*, a):
        return graph()
    """
)


async def test_a_factory_is_given_what_it_asks_for(tmp_path: Path) -> None:
    (tmp_path / "sig.py").write_text(SIGNATURES)
    names = ["bare", "runtime_only", "swapped", "positional", "with_default"]
    targets = {n: f"./sig.py:{n}" for n in [*names, "too_many", "keyword_unknown"]}
    registry = GraphRegistry(targets, tmp_path)
    errors = registry.load_all()
    assert sorted(errors) == ["keyword_unknown", "too_many"]
    assert "neither the config" in errors["too_many"]
    use = Access(
        "threads.read", InMemorySaver(), InMemoryStore(), {"configurable": {"k": "v"}}, "bob"
    )
    for name in names:
        async with registry.open(name, use) as graph:
            assert graph.checkpointer is use.checkpointer and graph.store is use.store
    assert loaded(tmp_path / "sig.py").SEEN == [
        ("bare",),
        ("runtime_only", "threads.read"),
        ("swapped", "threads.read", "v"),
        ("positional", "v", "threads.read"),
        ("with_default", 7),
    ]
    with pytest.raises(GraphLoadError, match="neither the config"):
        async with registry.open("too_many", use):
            pass
