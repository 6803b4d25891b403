"""Graph resolution from langgraph.json and --graph."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from outlast.errors import GraphLoadError, UnknownGraph
from outlast.graph.factories import Access, AccessContext
from outlast.graph.manifest import ManifestError
from outlast.graph.registry import GraphRegistry, parse_graph_option

SOURCE = textwrap.dedent(
    """
    from typing import TypedDict
    from langgraph.graph import StateGraph, START, END

    class S(TypedDict, total=False):
        x: int

    def inc(s: S) -> S:
        return {"x": s.get("x", 0) + 1}

    def builder():
        b = StateGraph(S)
        b.add_node("inc", inc)
        b.add_edge(START, "inc")
        b.add_edge("inc", END)
        return b

    compiled = builder().compile()
    uncompiled = builder()

    def factory():
        return builder().compile()

    def factory_with_config(config):
        assert isinstance(config, dict)
        return builder()

    not_a_graph = 42
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "g.py").write_text(SOURCE)
    graphs = {
        name: f"./app/g.py:{name}"
        for name in ("compiled", "uncompiled", "factory", "factory_with_config")
    }
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": graphs}))
    return tmp_path


def _use(context: AccessContext = "assistants.read") -> Access:
    return Access(context, InMemorySaver(), InMemoryStore())


async def test_every_form_loads_and_runs(project: Path) -> None:
    registry = GraphRegistry.from_config(project / "langgraph.json")
    assert registry.load_all() == {}
    assert registry.names == ["compiled", "uncompiled", "factory", "factory_with_config"]
    for name in registry.names:
        async with registry.open(name, _use()) as graph:
            assert await graph.ainvoke({"x": 1}, {"configurable": {"thread_id": name}}) == {"x": 2}
    assert [registry.is_factory(n) for n in registry.names] == [False, False, True, True]


def test_graph_option_and_module_targets(project: Path) -> None:
    registry = GraphRegistry.from_config(
        project / "langgraph.json",
        ["ex=outlast.graph.example:graph", "outlast.graph.example:graph"],
    )
    assert registry.names[-2:] == ["ex", "graph"]
    registry.load_all()
    assert parse_graph_option("a=b:c") == ("a", "b:c")
    with pytest.raises(GraphLoadError):
        parse_graph_option("no-colon")


def test_the_demo_graphs_only_without_any_configuration(tmp_path: Path) -> None:
    """outlast's own graphs stand in only when nothing names any: no file (``None``) and
    no ``--graph``. A file named that does not exist, or one with no graphs, is refused
    (``langgraph dev`` refuses both), never served with the demo graphs in its place."""
    registry = GraphRegistry.from_config(None)
    assert registry.names == ["agent", "steps", "booking"]
    registry.load_all()
    assert GraphRegistry.from_config(None, ["ex=outlast.graph.example:graph"]).names == ["ex"]
    with pytest.raises(ManifestError, match=r"nope\.json: no such file"):
        GraphRegistry.from_config(tmp_path / "nope.json")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"graphs": {}, "auth": {"path": "./auth.py:auth"}}))
    with pytest.raises(ManifestError, match="no graphs"):
        GraphRegistry.from_config(empty)
    # --graph gives the graphs the file does not: served with the file's other keys
    assert GraphRegistry.from_config(empty, ["ex=outlast.graph.example:graph"]).names == ["ex"]


def test_unknown_and_broken_graphs_are_clear_errors(project: Path) -> None:
    with pytest.raises(UnknownGraph, match="configured graphs"):
        GraphRegistry.from_config(project / "langgraph.json").load("missing")
    bad = GraphRegistry({"n": "./app/g.py:not_a_graph", "ok": "./app/g.py:compiled"}, project)
    assert list(bad.load_all()) == ["n"]  # reported, not raised: the other graphs serve
    assert "not a LangGraph graph" in (bad.error_of("n") or "") and bad.error_of("ok") is None
    with pytest.raises(GraphLoadError, match="not a LangGraph graph"):
        bad.load("n")
    assert bad.model_for("n", {}) is None  # accepted; its run fails with why
    gone = GraphRegistry({"n": "./app/nothing.py:x"}, project)
    with pytest.raises(GraphLoadError, match=r"nothing\.py"):
        gone.load("n")
    (project / "broken.json").write_text("{not json")
    with pytest.raises(GraphLoadError, match=r"langgraph\.json"):
        GraphRegistry.from_config(project / "broken.json")


def test_a_file_that_failed_to_import_is_imported_again(tmp_path: Path) -> None:
    """A half-run module must not stand in for the file: once the file is fixed, the
    next registry of the process (a restarted app, a test server) loads it."""
    graph_file = tmp_path / "flaky_graph.py"
    graph_file.write_text("raise RuntimeError('not yet')\n" + SOURCE)
    with pytest.raises(GraphLoadError, match="not yet"):
        GraphRegistry({"g": f"{graph_file}:compiled"}, tmp_path).load("g")
    graph_file.write_text(SOURCE)
    graph = GraphRegistry({"g": f"{graph_file}:compiled"}, tmp_path).static("g")
    assert graph.invoke({}) == {"x": 1}
