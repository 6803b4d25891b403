"""Our graphs open in LangGraph Studio: the real ``langgraph dev`` server, driven with the
LangGraph SDK as Studio drives it.

The server runs as a subprocess on the graphs of the repository's ``langgraph.json``. It
keeps its state in ``.langgraph_api/`` of its working directory and resolves the config's
relative paths against that directory too, so it runs in the test's temporary folder on a
copy of ``langgraph.json`` whose local paths are made absolute (what ``langgraph dev``
resolves them to when started at the repository root): nothing is written into the
repository, and a developer's own Studio state there is neither read nor touched.

The reference agent (offline scripted model) searches and reads the sample notes, then
``ask_human`` interrupts the run; resuming with ``Command(resume=...)`` lets it write the
report and send the email into the outbox under ``OUTLAST_DATA_DIR``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.harness import eventually_blocking

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
CONFIG = ROOT / "langgraph.json"
READY_TIMEOUT = 60.0
TASK = "Search the notes, ask who gets it, write a report and email it."
TASK_INPUT: dict[str, Any] = {"messages": [{"role": "user", "content": TASK}]}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_API_LINE = re.compile(r"API:\s*https?://[^\s/]+:(\d+)")


@dataclass
class Studio:
    url: str
    data_dir: Path
    log: Path

    def output(self) -> str:
        return _ANSI.sub("", self.log.read_text(encoding="utf-8", errors="replace"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_path(spec: str) -> bool:
    return spec.startswith((".", "/")) or spec.endswith(".py")


def _absolute_config(config: Path) -> dict[str, Any]:
    """``config`` with its local paths (graph files, local dependencies, an env file)
    resolved against its own folder; graph ids, variables and everything else unchanged."""
    data: dict[str, Any] = json.loads(config.read_text(encoding="utf-8"))
    base = config.parent.resolve()
    graphs: dict[str, Any] = {}
    for graph_id, spec in data["graphs"].items():
        if isinstance(spec, str):
            path, sep, variable = spec.rpartition(":")
            if sep and _is_path(path):
                spec = f"{base / path}:{variable}"
        graphs[graph_id] = spec
    data["graphs"] = graphs
    data["dependencies"] = [
        str(base / dep) if _is_path(dep) else dep for dep in data.get("dependencies", [])
    ]
    if isinstance(data.get("env"), str):
        data["env"] = str(base / data["env"])
    return data


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, then SIGKILL if it has not exited."""
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue


def _wait_ready(proc: subprocess.Popen[bytes], studio: Studio, port: int) -> None:
    """Until the server prints its address and answers ``GET /ok``; fails with its log."""

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{studio.output()}")
        printed = _API_LINE.search(studio.output())
        if not printed:
            return False
        if int(printed.group(1)) != port:
            pytest.fail(f"server is on another port:\n{printed[0]}")
        try:
            response = httpx.get(f"{studio.url}/ok", timeout=5)
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and response.json().get("ok") is True

    try:
        eventually_blocking(ready, timeout=READY_TIMEOUT, every=0.1, what="langgraph dev ready")
    except AssertionError:
        pytest.fail(f"langgraph dev not ready within {READY_TIMEOUT:.0f}s:\n{studio.output()}")


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[Studio]:
    """``langgraph dev`` on the repository's graphs, in ``tmp_path``, on a free port."""
    langgraph = Path(sys.executable).parent / "langgraph"
    assert langgraph.exists(), f"{langgraph} missing: install the dev extra (pip install -e .[dev])"
    folder = tmp_path / "studio"
    folder.mkdir()
    config = folder / "langgraph.json"
    config.write_text(json.dumps(_absolute_config(CONFIG), indent=2), encoding="utf-8")
    port = _free_port()
    studio = Studio(f"http://127.0.0.1:{port}", tmp_path / "data", tmp_path / "studio.log")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OUTLAST_")},
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "PYTHONIOENCODING": "utf-8",
        "OUTLAST_MODEL": "scripted",
        "OUTLAST_DATA_DIR": str(studio.data_dir),
        "OUTLAST_WORKSPACE_ROOT": str(tmp_path),
    }
    command = [
        str(langgraph),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        str(config),
    ]
    with studio.log.open("wb") as log:
        proc = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_ready(proc, studio, port)
        yield studio
    finally:
        _stop(proc)
        # Shown by pytest only when the test fails ("Captured stdout teardown").
        print(f"--- langgraph dev output ---\n{studio.output()[-20000:]}")


def _tool_calls(messages: list[dict[str, Any]]) -> list[str]:
    return [
        call["name"]
        for message in messages
        if message.get("type") == "ai"
        for call in message.get("tool_calls") or []
    ]


async def test_graphs_open_and_agent_runs_in_studio(studio: Studio) -> None:
    async with get_client(url=studio.url, timeout=30) as client:
        await _studio_session(studio, client)


async def _studio_session(studio: Studio, client: LangGraphClient) -> None:

    # Studio lists the graphs of langgraph.json as assistants and draws each one.
    declared = set(json.loads(CONFIG.read_text(encoding="utf-8"))["graphs"])
    assert {"agent", "supervisor"} <= declared
    assistants = await client.assistants.search(limit=100)
    by_graph = {a["graph_id"]: a for a in assistants}
    assert set(by_graph) == declared
    drawn: dict[str, set[str]] = {}
    for graph_id, assistant in by_graph.items():
        graph = await client.assistants.get_graph(assistant["assistant_id"])
        drawn[graph_id] = {str(node["id"]) for node in graph["nodes"]}
        assert {"__start__", "__end__"} <= drawn[graph_id], (graph_id, drawn[graph_id])
        # Studio's input form comes from the graph's schemas.
        schemas = await client.assistants.get_schemas(assistant["assistant_id"])
        assert schemas["input_schema"] and schemas["output_schema"], (graph_id, schemas)
    assert {"model", "tools"} <= drawn["agent"]
    schemas = await client.assistants.get_schemas(by_graph["agent"]["assistant_id"])
    assert "messages" in (schemas["input_schema"] or {}).get("properties", {}), schemas

    # The agent works until ask_human interrupts it.
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    first = await client.runs.wait(thread_id, "agent", input=TASK_INPUT)
    assert isinstance(first, dict), first
    assert _tool_calls(first["messages"]) == [
        "search_files",
        "read_file",
        "read_file",
        "read_file",
        "ask_human",
    ]
    assert (await client.threads.get(thread_id))["status"] == "interrupted"
    state = await client.threads.get_state(thread_id)
    assert list(state["next"]) == ["tools"]
    interrupts = [i for task in state["tasks"] for i in task["interrupts"]]
    assert len(interrupts) == 1, interrupts
    wait = interrupts[0]["value"]["outlast_wait"]
    assert wait["kind"] == "human"
    assert "Who should receive the report" in wait["prompt"]
    assert not (studio.data_dir / "outbox").exists()

    # Resumed with the answer, it writes the report, sends the email and finishes.
    final = await client.runs.wait(thread_id, "agent", command={"resume": "ana@example.com"})
    assert isinstance(final, dict), final
    messages: list[dict[str, Any]] = final["messages"]
    assert _tool_calls(messages) == [
        "search_files",
        "read_file",
        "read_file",
        "read_file",
        "ask_human",
        "write_report",
        "send_email",
    ]
    answers = [m for m in messages if m.get("type") == "tool" and m.get("name") == "ask_human"]
    assert [m["content"] for m in answers] == ["ana@example.com"]
    last_ai = [m for m in messages if m.get("type") == "ai"][-1]
    assert not last_ai.get("tool_calls"), last_ai
    assert last_ai is messages[-1]
    assert (await client.threads.get(thread_id))["status"] == "idle"

    assert (studio.data_dir / "reports" / "workspace-report.md").is_file()
    emails = sorted((studio.data_dir / "outbox").glob("*.eml"))
    assert len(emails) == 1, emails
    assert emails[0].read_text(encoding="utf-8").startswith("To: ana@example.com\n")
