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


# What the thread service decides (outlast/service/threads.py): a thread's rows and its
# checkpoints are written together, in an order that leaves no half (a delete under a
# run that owes compensations keeps that run; a copy or supersteps that fail remove the
# new thread). A face that wrote them itself would carry its own copy of that order.
THREAD_BUSINESS = {
    "lg_delete_thread",
    "lg_prune_threads",
    "adelete_thread",
    "acopy_thread",
    "aprune",
}


def _thread_writes(source: str) -> set[str]:
    """The thread writes a module names, on whatever holds them: the store
    (``ctx.store.lg_delete_thread``), a saver (``ctx.store.checkpointer().aprune``), a
    saver kept in a variable first, or a method passed along uncalled."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in THREAD_BUSINESS
    }


def test_the_thread_write_finder_sees_each_form() -> None:
    source = (
        "async def f(ctx, store):\n"
        "    await ctx.store.lg_delete_thread('t')\n"
        "    await ctx.store.checkpointer().acopy_thread('t', 'u')\n"
        "    saver = store.checkpointer()\n"
        "    prune = saver.aprune\n"
        "    await ctx.threads.delete('t')\n"
        "    await ctx.store.lg_threads(thread_id='t')\n"
    )
    assert _thread_writes(source) == {"lg_delete_thread", "acopy_thread", "aprune"}


def test_faces_leave_the_threads_business_to_the_thread_service() -> None:
    wrong = []
    for path in sorted((PACKAGE / "api").rglob("*.py")):
        for name in sorted(_thread_writes(path.read_text())):
            wrong.append(f"{path.relative_to(PACKAGE.parent)} calls {name}")
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


def _modules(path: Path, source: str | None = None) -> set[str]:
    """Every ``outlast`` module a file imports, dotted (``outlast.api.lg.accept``), in the
    forms ``imported`` sees; ``from x import y`` counts as both ``x`` and ``x.y`` (y may
    be a module)."""
    package = _package_of(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            found |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
    return {m for m in found if m == "outlast" or m.startswith("outlast.")}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_the_module_finder_sees_each_form() -> None:
    # as if each were in outlast/api/protocol/methods.py
    where = PACKAGE / "api" / "protocol" / "methods.py"
    for source in (
        "from outlast.api.lg.accept import start",
        "from ..lg import accept",
        "from ..lg.accept import start",
        "import outlast.api.lg.accept as a",
        "def later():\n    from outlast.api.lg import accept",
    ):
        assert "outlast.api.lg.accept" in _modules(where, source), source
    assert _modules(where, "from . import params\nimport os") == {
        "outlast.api.protocol",
        "outlast.api.protocol.params",
    }


def test_the_run_service_imports_no_face() -> None:
    """The service is below every face (ARCHITECTURE.md): a face's request shape or error
    it needed would make each face depend on the others through it."""
    wrong = [
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for path in sorted((PACKAGE / "service").rglob("*.py"))
        for module in sorted(_modules(path))
        if _within(module, "outlast.api")
    ]
    assert not wrong, "\n".join(wrong)


def test_protocol_v2_and_the_langgraph_face_stand_side_by_side() -> None:
    """Issue 42: protocol v2's ``run.start`` went through the LangGraph face's acceptance,
    and its reads through that face's lookups (a face on a face: 12 files, 5 climbs back
    up). Both call the services (``service/launch.py``, ``threads.py``, ``runs.py``) and
    share only what both write alike (``api/lgshared.py``, ``api/thread_walk.py``)."""
    wrong = [
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for face, other in (("protocol", "outlast.api.lg"), ("lg", "outlast.api.protocol"))
        for path in sorted((PACKAGE / "api" / face).rglob("*.py"))
        for module in sorted(_modules(path))
        if _within(module, other)
    ]
    assert not wrong, "\n".join(wrong)


# What the assistant and cron services decide (outlast/service/assistants.py, crons.py):
# every write of an assistant or a cron, after the app's handlers were asked, a system
# assistant refused, a cron's schedule and run request checked; and the scheduler's
# claims, which are the runtime's. A face that wrote one itself would skip those.
ASSISTANT_AND_CRON_WRITES = {
    "create_assistant",
    "update_assistant",
    "delete_assistant",
    "set_latest_assistant_version",
    "create_cron",
    "update_cron",
    "delete_cron",
    "claim_crons",
    "cron_fired",
}


def _store_calls_of(source: str, names: set[str]) -> set[str]:
    """The methods of ``names`` called on anything named ``store`` (``ctx.store.x(…)``,
    ``self.store.x(…)``, ``store.x(…)``), or taken from it to be called later."""
    called: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in names:
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "store":
                called.add(node.attr)
    return called


def test_the_assistant_and_cron_write_finder_sees_each_form() -> None:
    source = (
        "async def f(ctx, store):\n"
        "    await ctx.store.create_assistant(assistant_id=1)\n"
        "    await store.delete_cron(2)\n"
        "    update = functools.partial(ctx.store.update_cron, principal=None)\n"
        "    await ctx.store.get_assistant(3)\n"
        "    await ctx.store.search_crons(4)\n"
    )
    found = _store_calls_of(source, ASSISTANT_AND_CRON_WRITES)
    assert found == {"create_assistant", "delete_cron", "update_cron"}


def test_faces_leave_assistants_and_crons_to_their_services() -> None:
    wrong = []
    for path in sorted((PACKAGE / "api").rglob("*.py")):
        for name in sorted(_store_calls_of(path.read_text(), ASSISTANT_AND_CRON_WRITES)):
            wrong.append(f"{path.relative_to(PACKAGE.parent)} calls store.{name}")
    assert not wrong, "\n".join(wrong)
