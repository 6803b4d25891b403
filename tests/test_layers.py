"""The package's import direction, as ARCHITECTURE.md draws it: a new import that crosses a
layer the wrong way (the store importing the runtime, the runtime importing the API, the
terminal client importing the server) fails here, not in a review months later."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "outlast"

# Top-level modules everything may use; they use only each other.
FOUNDATION = {
    "vocabulary",
    "errors",
    "jsonable",
    "config",
    "logs",
    "tracing",
    "heap",
    "retry",  # the one retry policy
    "importing",  # the one module:attr resolver
}

# What each part of the package may import, besides itself and the foundation.
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "nodes": set(),  # what graph authors import: no server inside
    "supervisor": set(),
    "graph": {"nodes"},
    "runtime": {"store", "graph", "nodes", "supervisor", "webhooks", "secretbox", "credentials"},
    "api": {"store", "runtime", "graph", "webhooks", "secretbox"},
    "webhooks": {"store"},  # where, how and what a push notification sends
    "secretbox": set(),  # secrets at rest
    "credentials": {"nodes"},  # where a credential a tool names comes from
    "client": set(),  # the terminal client speaks HTTP only
    "demo": {"graph", "client"},  # the demo's follower reads streams as the client does
    "processes": set(),  # --workers N: processes of one command
    "cli": {"api", "client", "demo", "graph", "runtime", "store", "processes", "secretbox"},
    **{name: set() for name in FOUNDATION},
}


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {name.split(".")[1] for name in names if name.startswith("outlast.")}
    return found


def test_every_part_of_the_package_is_in_the_table() -> None:
    parts = {_part(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}
    assert parts == set(ALLOWED), parts ^ set(ALLOWED)


def test_imports_go_only_the_way_the_layers_allow() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = _part(path)
        if part == "__init__":
            continue
        # The foundation's own entries are empty, so it may import only itself.
        for target in _imports(path) - {part} - FOUNDATION - ALLOWED[part]:
            wrong.append(f"{path.relative_to(PACKAGE.parent)} imports outlast.{target}")
    assert not wrong, "\n".join(wrong)


TESTS = Path(__file__).resolve().parent


def test_test_modules_import_helpers_never_each_other() -> None:
    """Shared helpers live in the modules ``tests/harness.py`` lists, never in a test
    module another imports (running one would collect the other's tests too)."""
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_"):
                    wrong.append(f"{path.relative_to(TESTS.parent)} imports {name}")
    assert not wrong, "\n".join(wrong)
