"""``langgraph.json`` as LangGraph's server reads it: every key checked at start-up (a
wrong type stops the server and names the key), the keys outlast does not honour yet
listed with a warning, ``env`` given to the graphs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from outlast.cli import serve as cli_serve
from outlast.config import Settings
from outlast.graph.manifest import Manifest, ManifestError, ignored, warnings
from outlast.graph.registry import GraphRegistry
from outlast.importing import resolve_in
from outlast.runtime.deployment import store_options

GRAPH = "outlast.graph.example:graph"


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"graphs": {"a": 1}}, "graphs.a"),
        ({"graphs": {"a": GRAPH}, "http": {"disable_runs": "maybe"}}, "http.disable_runs"),
        ({"graphs": {"a": GRAPH}, "auth": {"path": 3}}, "auth.path"),
        ({"graphs": {"a": GRAPH}, "store": {"index": {"embed": "x"}}}, "store.index.dims"),
        ({"graphs": {"a": GRAPH}, "store": {"ttl": {"default_ttl": -1}}}, "store.ttl.default_ttl"),
        (
            {"graphs": {"a": GRAPH}, "checkpointer": {"ttl": {"strategy": "archive"}}},
            "checkpointer.ttl.strategy",
        ),
        ({"graphs": {"a": GRAPH}, "http": {"middleware_order": "last"}}, "http.middleware_order"),
        ({"graphs": {"a": GRAPH}, "env": ["A=1"]}, "env"),
        (["graphs"], "not a JSON object"),
    ],
)
def test_a_key_of_the_wrong_shape_is_named(tmp_path: Path, data: object, named: str) -> None:
    with pytest.raises(ManifestError, match=named.replace(".", r"\.")):
        Manifest.read(_write(tmp_path, data))


def test_the_server_refuses_to_start_and_says_which_key(tmp_path: Path) -> None:
    _write(tmp_path, {"graphs": {"a": GRAPH}, "http": {"disable_threads": [1]}})
    done = subprocess.run(
        [sys.executable, "-m", "outlast.cli", "serve", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "http.disable_threads" in done.stderr and "serving on" not in done.stderr


def test_keys_not_honoured_yet_are_listed_never_dropped_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keys LangGraph knows that outlast does not honour yet are one warning; keys
    LangGraph does not know and that are close to none it knows are another (``langgraph
    dev`` ignores them silently, ``langgraph validate`` warns "not a recognized config
    field"): each listed once, the server starts."""
    data = {
        "graphs": {"a": {"path": GRAPH, "description": "the example"}},
        "dependencies": ["."],
        "python_version": "3.11",  # building an image: nothing for a server to do
        "$schema": "https://langgra.ph/schema.json",  # for an editor
        "webhooks": {"env_prefix": "X_"},
        "http": {"require_https": True, "disable_meta": True},
        "store": {"ttl": {"default_ttl": 10}, "serde": {}, "path": "./store.py:make"},
        "checkpointer": {"serde": {"pickle_fallback": True}},
        "bogus": 1,
    }
    path = _write(tmp_path, data)
    manifest = Manifest.read(path)
    assert manifest.graph_targets() == {"a": GRAPH}
    honoured_not = ["checkpointer.serde", "store.path", "webhooks"]
    unknown = ["http.require_https", "store.serde", "bogus"]
    assert ignored(manifest) == honoured_not
    assert manifest.unknown == unknown
    assert cli_serve.manifest_ok(Settings(graphs_file=path))
    said = capsys.readouterr().err
    assert said.count("\n") == 2  # one line each
    assert f"does not honour these keys yet: {', '.join(honoured_not)}" in said
    assert f"LangGraph does not know these keys, and ignores them: {', '.join(unknown)}" in said


@pytest.mark.parametrize(
    ("data", "typo", "meant"),
    [
        ({"grpahs": {"a": GRAPH}}, "grpahs", "graphs"),
        ({"graphs": {"a": GRAPH}, "htpp": {"disable_threads": True}}, "htpp", "http"),
        ({"graphs": {"a": GRAPH}, "auht": {"path": "./auth.py:auth"}}, "auht", "auth"),
        (
            {"graphs": {"a": GRAPH}, "http": {"disable_thread": True}},
            "http.disable_thread",
            "http.disable_threads",
        ),
        ({"graphs": {"a": GRAPH}, "auth": {"pth": "./a.py:auth"}}, "auth.pth", "auth.path"),
        (
            {"graphs": {"a": GRAPH}, "store": {"ttl": {"default_tll": 5}}},
            "store.ttl.default_tll",
            "store.ttl.default_ttl",
        ),
    ],
)
def test_a_key_close_to_one_langgraph_knows_is_refused_with_what_it_likely_means(
    tmp_path: Path, data: object, typo: str, meant: str
) -> None:
    """Served as it is, the typo would drop what it meant (the app's graphs, its auth, a
    route group it disables): ``langgraph dev`` refuses ``grpahs`` (no graphs) and
    ``langgraph validate`` says "did you mean"; outlast refuses every such key."""
    with pytest.raises(ManifestError) as raised:
        Manifest.read(_write(tmp_path, data))
    assert f"{typo}: not a key LangGraph knows; did you mean `{meant}`?" in str(raised.value)


def test_env_reaches_the_graphs_and_the_process_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "graph.py").write_text(
        "import os\nfrom langgraph.graph import StateGraph\n"
        "SEEN = (os.environ.get('OUTLAST_T_FROM_FILE'), os.environ.get('OUTLAST_T_SET'))\n"
        "b = StateGraph(dict)\nb.add_node('n', lambda s: {})\nb.set_entry_point('n')\n"
        "graph = b.compile()\n"
    )
    (tmp_path / ".env").write_text("OUTLAST_T_FROM_FILE=file\nOUTLAST_T_SET=file\n")
    monkeypatch.setenv("OUTLAST_T_SET", "operator")
    try:
        path = _write(tmp_path, {"graphs": {"g": "./graph.py:graph"}, "env": ".env"})
        GraphRegistry.from_config(path).load_all()
        # set before the graph's module was imported, which reads them
        assert resolve_in("./graph.py:SEEN", tmp_path) == ("file", "operator")
        os.environ.pop("OUTLAST_T_FROM_FILE")
        inline = {"graphs": {"g": GRAPH}, "env": {"OUTLAST_T_FROM_FILE": "inline"}}
        GraphRegistry.from_config(_write(tmp_path, inline))
        assert os.environ["OUTLAST_T_FROM_FILE"] == "inline"
    finally:
        os.environ.pop("OUTLAST_T_FROM_FILE", None)
    # an env file that does not exist is read as empty, as on LangGraph's server: a
    # warning, and the graphs load
    missing = _write(tmp_path, {"graphs": {"g": GRAPH}, "env": "nope.env"})
    assert GraphRegistry.from_config(missing).load_all() == {}
    said = warnings(Manifest.read(missing))
    assert said == [
        f"{missing}: env: {tmp_path / 'nope.env'} does not exist; no variables are read from it"
    ]


def test_store_and_checkpointer_sections_become_the_stores_options(tmp_path: Path) -> None:
    """``store.ttl``, ``store.index`` (``embed`` a file's function, imported after ``env``)
    and ``checkpointer.ttl``, in minutes as LangGraph reads them."""
    (tmp_path / "embed.py").write_text(
        "import os\nDIMS = int(os.environ['EMBED_TEST_DIMS'])\n"
        "def embed(texts):\n    return [[1.0] * DIMS for _ in texts]\n"
    )
    data = {
        "graphs": {"a": GRAPH},
        "env": {"EMBED_TEST_DIMS": "2"},
        "store": {
            "ttl": {"default_ttl": 1.5, "refresh_on_read": False, "sweep_interval_minutes": 2},
            "index": {"dims": 2, "embed": "./embed.py:embed", "fields": ["text"]},
        },
        "checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 60}},
    }
    try:
        options = store_options(Manifest.read(_write(tmp_path, data)))
    finally:
        os.environ.pop("EMBED_TEST_DIMS", None)
    assert options.item_ttl.default_minutes == 1.5
    assert options.item_ttl.refresh_on_read is False
    assert options.item_ttl.sweep_minutes == 2
    assert options.index is not None and options.index.dims == 2
    assert options.index.fields == ("text",)
    assert options.index.embed(["x"]) == [[1.0, 1.0]]
    assert options.thread_ttl.default_minutes == 60
    assert options.thread_ttl.strategy == "keep_latest"
    assert options.thread_ttl.sweep_minutes == 5  # LangGraph's default interval
    assert store_options(Manifest.read(None)).index is None
    bad = {**data, "store": {"index": {"dims": 2, "embed": "./nowhere.py:embed"}}}
    with pytest.raises(ManifestError, match=r"store\.index\.embed"):
        store_options(Manifest.read(_write(tmp_path, bad)))
