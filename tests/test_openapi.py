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


def _env_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """``os.environ.get(X)``, ``os.environ[X]``, ``os.getenv(X)``, ``X in os.environ``
    where X is an ``OUTLAST_`` literal or a module constant bound to one."""
    names = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def outlast(arg: ast.expr) -> str | None:
        value = arg.value if isinstance(arg, ast.Constant) else None
        if isinstance(arg, ast.Name):
            value = names.get(arg.id)
        return value if isinstance(value, str) and value.startswith("OUTLAST_") else None

    def environ(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    found = []
    for node in ast.walk(tree):
        arg: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and (
                (func.attr in ("get", "pop", "setdefault") and environ(func.value))
                or func.attr == "getenv"
            ):
                arg = node.args[0]
        elif isinstance(node, ast.Subscript) and environ(node.value):
            arg = node.slice
        elif isinstance(node, ast.Compare) and any(environ(c) for c in node.comparators):
            arg = node.left
        name = outlast(arg) if arg is not None else None
        if name:
            found.append((node.lineno, name))
    return found


def test_no_module_reads_an_outlast_variable_but_config() -> None:
    offenders = []
    for path in sorted((ROOT / "outlast").rglob("*.py")):
        if path == ROOT / "outlast" / "config.py":
            continue
        for line, name in _env_reads(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{path.relative_to(ROOT)}:{line} reads {name}")
    assert not offenders, "\n".join(offenders)


def test_the_check_finds_a_direct_read() -> None:
    source = 'import os\nENV = "OUTLAST_X"\na = os.environ.get(ENV)\nb = os.getenv("OUTLAST_Y")\n'
    assert [name for _, name in _env_reads(ast.parse(source))] == ["OUTLAST_X", "OUTLAST_Y"]


def test_the_model_api_key_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTLAST_MODEL_API_KEY", "sk-very-secret-value")
    settings = ModelSettings()
    assert "sk-very-secret-value" not in repr(settings) + str(settings.model_dump())
    assert settings.model_api_key is not None
    assert settings.model_api_key.get_secret_value() == "sk-very-secret-value"
