"""The package's import direction, as ARCHITECTURE.md draws it: a new import that crosses a
layer the wrong way (the store importing the runtime, the runtime importing the API, the
terminal client importing the server) fails here, not in a review months later."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "outlast"

# Top-level modules everything may use; they use only each other.
FOUNDATION = {"vocabulary", "errors", "jsonable", "config", "logs", "tracing", "heap"}

# What each part of the package may import, besides itself and the foundation.
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "nodes": set(),  # what graph authors import: no server inside
    "supervisor": set(),
    "graph": {"nodes"},
    "runtime": {"store", "graph", "nodes", "supervisor", "webhooks", "secretbox", "credentials"},
    # the run service: a run's business once, between the faces and the store/runtime
    "service": {"store", "runtime", "graph", "secretbox", "webhooks"},
    "api": {"service", "store", "runtime", "graph", "webhooks", "secretbox"},
    "webhooks": {"store"},  # where, how and what a push notification sends
    "secretbox": set(),  # secrets at rest
    "credentials": {"nodes"},  # where a credential a tool names comes from
    "client": set(),  # the terminal client speaks HTTP only
    "demo": {"graph"},
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


# What the run service decides (outlast/service/): a face that wrote one of these itself
# would carry its own copy of the run's business, and the copies drift (the A2A face once
# answered a wait without the size check the other faces made).
RUN_BUSINESS = {
    "create_run",
    "create_thread_run",
    "lg_create_run",
    "lg_resume",
    "answer",
    "signal",
    "request_cancel",
    "lg_delete_runs_of",
}


def _store_calls(source: str) -> set[str]:
    """The names of methods called on anything named ``store`` (``ctx.store.x(…)``,
    ``store.x(…)``), and on a ``store`` passed along as a function."""
    called: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in RUN_BUSINESS:
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "store":
                called.add(node.attr)
    return called


def test_the_store_call_finder_sees_each_form() -> None:
    source = (
        "async def f(ctx, store):\n"
        "    await ctx.store.answer(1)\n"
        "    await store.request_cancel(2)\n"
        "    create = functools.partial(ctx.store.lg_create_run, lg=1)\n"
        "    await ctx.store.get_run(3)\n"
    )
    assert _store_calls(source) == {"answer", "request_cancel", "lg_create_run"}


def test_faces_leave_the_runs_business_to_the_run_service() -> None:
    wrong = []
    for path in sorted((PACKAGE / "api").rglob("*.py")):
        for name in sorted(_store_calls(path.read_text())):
            wrong.append(f"{path.relative_to(PACKAGE.parent)} calls store.{name}")
    assert not wrong, "\n".join(wrong)
