"""The reference agent end to end with the scripted model, on both backends."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast.graph.tools import outbox_messages
from outlast.runtime.accept import RunRequest
from outlast.store import Store
from outlast.vocabulary import RunStatus
from tests.harness import (
    PATIENCE,
    answer,
    collect,
    make_settings,
    post_run,
    serve,
    until_snapshot,
    wait_result,
)
from tests.procs import after_fault, kill, start_worker, wait_for_status
from tests.util import accept

EVERYTHING = (
    "Search the notes, compute the total words, render a job, sleep 0.3, wait for event "
    "{key}, ask who gets it, write a report and email it."
)
QUICK = "Search the notes, compute the total words, write a report and email it to ana@example.com"


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    return {"outbox": str(tmp_path / "outbox"), "reports": str(tmp_path / "reports")}


async def wait_kind(
    client: httpx.AsyncClient, run_id: str, kind: str, timeout: float = PATIENCE
) -> dict[str, Any]:
    """Poll until the run waits on a ``kind`` wait (it passes through others on the way)."""

    def check(snap: dict[str, Any]) -> bool:
        assert snap["status"] in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING), snap
        # the run and its waits are two reads: a wait that just ended can leave "waiting"
        # with no open wait for a moment
        return bool(
            snap["status"] == RunStatus.WAITING and (snap["wait"] or {}).get("kind") == kind
        )

    return await until_snapshot(client, run_id, check, timeout=timeout, what=f"a {kind} wait")


def tool_path(result: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The tool calls a run made, in order: (id, name, args)."""
    return [
        (call["id"], call["name"], call["args"])
        for message in result["messages"]
        if message.get("type") == "ai"
        for call in message.get("tool_calls") or []
    ]


async def test_the_agent_uses_every_kind_of_tool(store: Store, folders: dict[str, str]) -> None:
    """... and its budget counts every tool call once across its four waits: a park keeps
    the usage it metered (activity writes, which also carry it, are an hour apart here)."""
    key = f"deploy-{store.__class__.__name__.lower()}"
    settings = make_settings(waker_interval=0.2, activity_flush_interval=3600)
    async with serve(store, settings) as srv:
        run = await post_run(
            srv.client,
            graph="agent",
            input={"messages": [{"role": "user", "content": EVERYTHING.format(key=key)}]},
            config={"configurable": folders},
            budget={"tool_calls": {"soft": 1000}},
        )
        assert run["model"] == "scripted"  # the snapshot says which model answers
        # The job (external, probed) and the timer: the run parks and wakes by itself.
        snap = await wait_kind(srv.client, run["id"], "event")
        assert snap["wait"]["object"] == {"keys": [key]}
        signal_ = await srv.client.post(f"/v1/signals/{key}", json={"payload": {"ok": 1}})
        assert signal_.json()["woken"] == 1
        snap = await wait_kind(srv.client, run["id"], "human")
        assert (await answer(srv, run["id"], snap["wait"]["id"], "bo@example.com")).is_success
        final = await wait_result(srv.client, run["id"])
    assert final["status"] == "completed", final
    names = [name for _, name, _ in tool_path(final["result"])]
    assert names == [
        "search_files",
        *["read_file"] * 3,
        "compute",
        "wait_for_job",
        "sleep_until",
        "wait_for_event",
        "ask_human",
        "write_report",
        "send_email",
    ]
    assert final["budget"]["usage"]["tool_calls"] == len(names)
    (mail,) = outbox_messages(Path(folders["outbox"]))
    assert mail.startswith("To: bo@example.com\n")
    report = (Path(folders["reports"]) / "workspace-report.md").read_text()
    assert "compute: 200" in report  # the words of the three sample notes, counted for real


async def test_the_agent_streams_tokens_and_records_its_effect(
    store: Store, folders: dict[str, str]
) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client,
            graph="agent",
            input={"messages": [{"role": "user", "content": QUICK}]},
            config={"configurable": folders},
        )
        final = await wait_result(srv.client, run["id"])
        events = await collect(srv.client, run["id"])
        effects = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
    assert final["status"] == "completed"
    types = [e.event for e in events]
    assert "message.delta" in types  # model tokens streamed, coalesced
    assert [e["tool"] for e in effects] == ["send_email"] and effects[0]["status"] == "done"
    assert [e.data["seq"] for e in events] == list(range(1, len(events) + 1))


async def test_a_killed_run_resumes_on_the_same_path_and_mails_once(
    store: Store, db_url: str, tmp_path: Path, folders: dict[str, str]
) -> None:
    """Worker 1 dies right after the email left (before the ledger heard back); worker
    2 resumes from the last checkpoint, the scripted model takes the same path, and the
    outbox is asked instead of sending again."""
    message = {"messages": [{"role": "user", "content": QUICK}]}
    reference, _ = await accept(
        store,
        RunRequest(graph="agent", input=message, config={"configurable": folders}),
        graphs=["agent"],
        max_attempts=3,
    )
    worker = start_worker(db_url, tmp_path / "w0.log")
    try:
        clean = await wait_for_status(store, reference.id, {"completed", "failed"}, proc=worker)
    finally:
        kill(worker, signal.SIGTERM)
    assert clean.status.value == "completed"
    crashed_box = tmp_path / "crashed-outbox"
    conf = {**folders, "outbox": str(crashed_box)}
    run, _ = await accept(
        store,
        RunRequest(graph="agent", input=message, config={"configurable": conf}),
        graphs=["agent"],
        max_attempts=3,
    )
    async with after_fault(db_url, tmp_path, "effect.after_call") as second:
        final = await wait_for_status(store, run.id, {"completed", "failed"}, proc=second)
    # the model's step was saved before the worker died: its loss cost no attempt
    assert final.status.value == "completed" and final.attempts == 1
    assert tool_path(final.result) == tool_path(clean.result)
    assert len(outbox_messages(crashed_box)) == 1  # sent once, although the worker died
    (effect,) = await store.list_effects(run.id)
    assert (effect.tool, effect.status, effect.calls) == ("send_email", "done", 1)
    types = [e.type for e in await store.read_events(run.id, 0, 10_000)]
    assert "effect.unknown" in types  # it was asked about, not re-sent


@pytest.mark.parametrize(
    ("model", "env", "says"),
    [
        ("openai:gpt-4o-mini", {}, "OPENAI_API_KEY is not set"),
        # a provider whose package is not installed (the dev extra has OpenAI's)
        ("anthropic:claude-sonnet-4-5", {"ANTHROPIC_API_KEY": "sk-test"}, "pip install"),
        ("gpt-4o", {}, "provider:model"),
        ("nosuch:model", {}, "Unsupported provider"),
    ],
)
async def test_an_unusable_model_is_refused_at_run_creation(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    env: dict[str, str],
    says: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    async with serve(store, with_worker=False) as srv:
        body = {"graph": "agent", "input": {}, "config": {"configurable": {"model": model}}}
        response = await srv.client.post("/v1/runs", json=body)
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["title"] == "Model unavailable"
        assert says in response.json()["detail"]
        assert (await srv.client.get("/v1/runs")).json()["runs"] == []  # nothing written


async def test_the_deployment_model_is_checked_too(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_MODEL", "anthropic:claude-sonnet-4-5")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    async with serve(store, with_worker=False) as srv:
        agent = await srv.client.post("/v1/runs", json={"graph": "agent", "input": {}})
        assert agent.status_code == 422 and "ANTHROPIC_API_KEY" in agent.json()["detail"]
        # a graph that calls no model does not care
        steps = await srv.client.post("/v1/runs", json={"graph": "steps", "input": {}})
        assert steps.status_code == 202 and steps.json()["model"] is None


async def test_the_scripted_model_is_a_function_of_the_conversation() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from outlast.graph.scripted import ScriptedChatModel
    from outlast.graph.tools import TOOLS

    model = ScriptedChatModel().bind_tools(TOOLS)
    talk = [HumanMessage(QUICK)]
    first, second = await model.ainvoke(talk), await model.ainvoke(talk)
    assert (
        first.tool_calls
        == second.tool_calls
        == [
            {
                "name": "search_files",
                "args": {"pattern": "*"},
                "id": "call_0_0_search_files",
                "type": "tool_call",
            }
        ]
    )
    streamed: Any = None
    async for chunk in model.astream(talk):
        streamed = chunk if streamed is None else streamed + chunk
    assert streamed.tool_calls == first.tool_calls  # tool calls stream as argument fragments
    assert streamed.usage_metadata["total_tokens"] == first.usage_metadata["total_tokens"] > 0
    # only bound tools are called: with none, it answers in words
    plain = await ScriptedChatModel().ainvoke(talk)
    assert isinstance(plain, AIMessage) and not plain.tool_calls
    # the supervisor's reminder is heard
    reminded = await model.ainvoke([*talk, HumanMessage("stay on the task", name="supervisor")])
    assert str(reminded.content).startswith("(supervisor: stay on the task)")


async def test_tool_calls_renew_the_activity_lease(folders: dict[str, str]) -> None:
    """Under plain LangGraph the signs of life are custom stream chunks; outlast turns them
    into lease renewals."""
    from langgraph.checkpoint.memory import InMemorySaver

    from outlast.graph.agent import make_graph
    from outlast.nodes.activity import ACTIVITY_KEY

    graph = make_graph().copy(update={"checkpointer": InMemorySaver()})
    config = {"configurable": {"thread_id": "t", **folders}}
    notes = [
        chunk[ACTIVITY_KEY]["note"]
        async for chunk in graph.astream(
            {"messages": [{"role": "user", "content": QUICK}]}, config, stream_mode="custom"
        )
        if isinstance(chunk, dict) and ACTIVITY_KEY in chunk
    ]
    assert notes[:3] == ["tool search_files started", "search_files '*'", "tool search_files done"]
    assert "tool send_email done" in notes


def test_the_sample_notes_are_read_but_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outlast.graph import tools

    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    sample = {"workspace": str(tools.SAMPLE_WORKSPACE), "reports": str(tools.SAMPLE_WORKSPACE)}
    monkeypatch.setattr(tools, "_configurable", lambda: sample)
    assert tools.workspace() == tools.SAMPLE_WORKSPACE.resolve()
    with pytest.raises(tools.ToolRefused):
        tools._data_dir("reports")
    monkeypatch.setattr(tools, "_configurable", lambda: {"reports": str(tmp_path / "r")})
    assert tools._data_dir("reports") == (tmp_path / "r").resolve()


def test_tools_stay_inside_the_workspace(folders: dict[str, str], tmp_path: Path) -> None:
    from outlast.graph.tools import ToolRefused, _inside, evaluate

    with pytest.raises(ToolRefused):
        _inside(tmp_path / "ws", "../../etc/passwd")
    assert evaluate("2 ** 10 + 88 / 4") == 1046
    for hostile in ("__import__('os')", "2 ** 9999", "open('x')", "1/0"):
        with pytest.raises(ToolRefused):
            evaluate(hostile)
