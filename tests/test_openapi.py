"""The OpenAPI document tells the truth, and every ``OUTLAST_*`` variable goes through
``outlast.config``.

schemathesis runs as a new user would run it (``schemathesis run <server>/openapi.json
--checks all``), against a real ``outlast serve``, over the native face (``/v1``, the
health routes, ``/metrics``; the LangGraph face at the root has its own tests). Two
settings differ from the defaults, each for a stated reason:

* ``positive_data_acceptance`` is replaced by the same check less the few refusals no
  document can describe (state, or two fields compared): ``tests/schemathesis_hooks.py``.
* ``allow-extra-parameters = false``: the server ignores query parameters it does not
  know (a cache-buster, ``stream_token`` on the stream), on purpose.

Deterministic generation and a bounded number of examples per operation keep it from
failing at random and its time bounded.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from outlast.config import ModelSettings
from tests.procs import kill, start_server

ROOT = Path(__file__).parent.parent
EXAMPLES = 10
CONFIG = """
[generation]
allow-extra-parameters = false
"""


def _langgraph_json(folder: Path) -> Path:
    graphs = ROOT / "tests" / "graphs.py"
    path = folder / "langgraph.json"
    path.write_text(
        '{"graphs": {"steps": "outlast.graph.example:graph", '
        f'"asks": "{graphs}:asks", "boom": "{graphs}:boom"}}}}'
    )
    return path


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.timeout(600)
def test_schemathesis_with_all_checks_finds_nothing(db_url: str, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    proc, url = start_server(
        db_url,
        tmp_path / "server.log",
        "--config",
        str(_langgraph_json(tmp_path)),
        "--data-dir",
        str(tmp_path / "data"),
        OUTLAST_RATE_LIMIT="0",
        OUTLAST_RESULT_WAIT_MAX="0.2",
        # a stream ends by itself, so schemathesis reads it to its end
        OUTLAST_STREAM_MAX_SECONDS="1",
    )
    try:
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "--config-file",
                str(config),
                "run",
                f"{url}/openapi.json",
                "--checks",
                "all",
                "--exclude-checks",
                "positive_data_acceptance",
                "--max-examples",
                str(EXAMPLES),
                "--generation-deterministic",
                "--workers",
                "1",
                "--no-color",
                "--include-path-regex",
                "^/(v1/|healthz$|readyz$|metrics$)",
                "--request-timeout",
                "20",
            ],
            env={
                **os.environ,
                "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
                "PYTHONPATH": str(ROOT),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=540,
        )
    finally:
        kill(proc)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-3000:]
    assert "Tested: 23" in done.stdout, done.stdout[-3000:]  # every /v1 operation


# -- every OUTLAST_* variable through outlast.config --------------------------------------


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level string constants (``ENV = "OUTLAST_X"``)."""
    found: dict[str, str] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found |= {t.id: value.value for t in targets if isinstance(t, ast.Name)}
    return found


def _known(tree: ast.Module, package: dict[str, dict[str, str]]) -> dict[str, str]:
    """The string constants a module can name: its own and those it imports from the
    package (``from outlast.nodes.credentials import ENV_PREFIX``)."""
    known = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in package:
            for alias in node.names:
                if alias.name in package[node.module]:
                    known[alias.asname or alias.name] = package[node.module][alias.name]
    return known


def _key(arg: ast.expr, known: dict[str, str]) -> str | None:
    """The ``OUTLAST_`` variable an expression names, when it is one or starts with one:
    a literal, a constant, ``PREFIX + x``, ``"OUTLAST_%s" % x``, ``f"OUTLAST_{x}"``,
    ``"OUTLAST_{}".format(x)``. A built name reads as its prefix and ``…``."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        value: str | None = arg.value
    elif isinstance(arg, ast.Name):
        value = known.get(arg.id)
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add | ast.Mod):
        value = _key(arg.left, known)
        value = value and value + "…"
    elif isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        head = first.value if isinstance(first, ast.FormattedValue) else first
        value = _key(head, known)
        value = value and value + "…"
    elif isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute):
        value = _key(arg.func.value, known) if arg.func.attr == "format" else None
        value = value and value + "…"
    else:
        value = None
    return value if value and value.startswith("OUTLAST_") else None


def _environ(node: ast.expr) -> bool:
    """``os.environ``, ``environ`` (``from os import environ``), or ``mine or os.environ``."""
    if isinstance(node, ast.BoolOp):
        return any(_environ(value) for value in node.values)
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _env_reads(
    tree: ast.Module, package: dict[str, dict[str, str]] | None = None
) -> list[tuple[int, str]]:
    """``os.environ.get(X)``, ``os.environ[X]``, ``os.getenv(X)``, ``X in os.environ``
    where X is an ``OUTLAST_`` name or built from one (``_key``)."""
    known = _known(tree, package or {})
    found = []
    for node in ast.walk(tree):
        arg: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "pop", "setdefault")
                and _environ(func.value)
            ) or (
                (isinstance(func, ast.Attribute) and func.attr == "getenv")
                or (isinstance(func, ast.Name) and func.id == "getenv")
            ):
                arg = node.args[0]
        elif isinstance(node, ast.Subscript) and _environ(node.value):
            arg = node.slice
        elif isinstance(node, ast.Compare) and any(_environ(c) for c in node.comparators):
            arg = node.left
        name = _key(arg, known) if arg is not None else None
        if name:
            found.append((node.lineno, name))
    return found


def test_no_module_reads_an_outlast_variable_but_the_config_package() -> None:
    paths = sorted((ROOT / "outlast").rglob("*.py"))
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in paths}
    package = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts): _constants(tree)
        for path, tree in trees.items()
    }
    offenders = []
    for path, tree in trees.items():
        if path.parent == ROOT / "outlast" / "config":
            continue
        for line, name in _env_reads(tree, package):
            offenders.append(f"{path.relative_to(ROOT)}:{line} reads {name}")
    assert not offenders, "\n".join(offenders)


def test_the_check_finds_a_direct_read() -> None:
    source = 'import os\nENV = "OUTLAST_X"\na = os.environ.get(ENV)\nb = os.getenv("OUTLAST_Y")\n'
    assert [name for _, name in _env_reads(ast.parse(source))] == ["OUTLAST_X", "OUTLAST_Y"]


def test_the_check_finds_a_name_built_from_a_prefix() -> None:
    source = """
import os
from os import environ, getenv
from outlast.somewhere import PREFIX as P
LOCAL = "OUTLAST_L_"
a = os.environ.get(P + name.upper())
b = os.environ[f"OUTLAST_CREDENTIAL_{name}"]
c = getenv("OUTLAST_{}".format(name))
d = (mine or os.environ).get(LOCAL + name)
e = f"{P}{name}" in environ
f = os.environ.get("OUTLAST_%s" % name)
g = os.environ.get(f"HOME_{name}")  # not ours
h = os.environ.get(name + "OUTLAST_")  # does not start with it
"""
    package = {"outlast.somewhere": {"PREFIX": "OUTLAST_CREDENTIAL_"}}
    assert [name for _, name in _env_reads(ast.parse(source), package)] == [
        "OUTLAST_CREDENTIAL_…",
        "OUTLAST_CREDENTIAL_…",
        "OUTLAST_{}…",
        "OUTLAST_L_…",
        "OUTLAST_CREDENTIAL_…",
        "OUTLAST_%s…",
    ]


def test_the_model_api_key_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTLAST_MODEL_API_KEY", "sk-very-secret-value")
    settings = ModelSettings()
    assert "sk-very-secret-value" not in repr(settings) + str(settings.model_dump())
    assert settings.model_api_key is not None
    assert settings.model_api_key.get_secret_value() == "sk-very-secret-value"
