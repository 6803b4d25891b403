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
    "faults",  # named fault-injection points, armed only by tests
    "cancelling",  # a task cancelled until it has ended
    "taskdump",  # kill -USR1: every task's awaits
}

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
    # the demo's follower reads streams as the client does; its servers share one bound
    # socket the way --workers N does (processes.listen, processes.handed_over)
    "demo": {"graph", "client", "processes"},
    "processes": set(),  # --workers N: processes of one command
    "cli": {"api", "client", "demo", "graph", "runtime", "store", "processes", "secretbox"},
    **{name: set() for name in FOUNDATION},
}


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def _package_of(path: Path) -> list[str]:
    """The dotted package a module is in: ``outlast/api/lg/runs.py`` → outlast.api.lg
    (and ``outlast/api/lg/__init__.py`` → outlast.api.lg too), for relative imports."""
    relative = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return list(relative[:-1])


def imported(tree: ast.Module, package: list[str]) -> set[str]:
    """The parts of ``outlast`` a module imports, in every form: ``import outlast.x``,
    ``import outlast.x.y as z``, ``from outlast import x``, ``from outlast.x import y``,
    relative imports (``from . import y``, ``from ..x import y``), wherever they are: at the
    top, inside a function, under ``if TYPE_CHECKING:``.

    A ``TYPE_CHECKING`` import counts: it is never executed, but it is what the module
    knows of the other part (it names its types), which is the dependency the table is
    about. ``from outlast import __version__`` reads the package's root (``__init__``),
    which every part may."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            # ``from outlast import x`` and ``from . import x``: x may be a part itself
            dotted = [[*module, a.name] for a in node.names] if len(module) == 1 else [module]
        else:
            continue
        for names in dotted:
            if names[0] == "outlast":
                found.add(names[1] if len(names) > 1 and _is_part(names[1]) else "__init__")
    return found


def _is_part(name: str) -> bool:
    """A module or package of ``outlast``, not a name its ``__init__`` defines."""
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def _imports(path: Path) -> set[str]:
    return imported(ast.parse(path.read_text()), _package_of(path))


def test_every_part_of_the_package_is_in_the_table() -> None:
    parts = {_part(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}
    assert parts == set(ALLOWED), parts ^ set(ALLOWED)


def test_the_checker_sees_every_form_of_import() -> None:
    source = """
import outlast.store
import outlast.runtime.worker as worker
from outlast import api
from outlast.graph.registry import GraphRegistry
from outlast import __version__
from . import sibling
from .thing import x
from .. import processes
from ..webhooks import sender
from ..client.sse import parse
import os, json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from outlast.secretbox import SecretBox

def later():
    from outlast.cli import main
    import outlast.supervisor.ladder
"""
    # as if it were outlast/demo/mod.py: ``.`` is outlast.demo, ``..`` outlast
    seen = imported(ast.parse(source), ["outlast", "demo"])
    assert seen == {
        *("store", "runtime", "api", "graph", "__init__"),
        *("demo", "processes", "webhooks", "client"),
        *("secretbox", "cli", "supervisor"),
    }, seen


def test_imports_go_only_the_way_the_layers_allow() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = _part(path)
        if part == "__init__":
            continue
        # The foundation's own entries are empty, so it may import only itself.
        for target in _imports(path) - {part, "__init__"} - FOUNDATION - ALLOWED[part]:
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
