"""The reference agent's tools: real work on this machine, waits, and one declared effect.

Offline tools work on a folder the run is given (``configurable.workspace``; by default
the sample notes shipped with outlast): ``search_files``, ``read_file``, ``compute`` and
``write_report``. Every path a run names (``workspace``, ``reports``, ``outbox``) must
resolve inside ``OUTLAST_WORKSPACE_ROOT`` (default: the current directory) or the sample
notes, so a request cannot make the server read or write anywhere else. Reports and the
outbox default to ``OUTLAST_DATA_DIR`` (default ``.outlast``), an operator's choice. File
work runs in a thread: the event loop (and the leases it renews) never blocks on the disk.

Waiting tools park the run through the wait nodes (``ask_human``, ``wait_for_job``,
``sleep_until``, ``wait_for_event``). ``send_email`` is a declared effect: it drops a
message into a local outbox, and after a crash its ``reconcile`` asks the outbox whether
the message left, so a recovered run never sends it twice.
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json
import operator
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.config import get_config

from outlast.config import WorkspaceSettings
from outlast.nodes import (
    ProbeResult,
    progress,
    wait_external,
    wait_for_event,
    wait_for_human,
)
from outlast.nodes import sleep_until as sleep_until_node
from outlast.nodes.effects import effect

SAMPLE_WORKSPACE = Path(__file__).parent / "workspace"
MAX_READ = 64 * 1024


class ToolRefused(ValueError):
    """A tool argument the tool will not act on (a path outside the workspace, …)."""


def _configurable() -> dict[str, Any]:
    try:
        return dict(get_config().get("configurable", {}))
    except RuntimeError:  # called outside a graph (a notebook, a unit test)
        return {}


def _root() -> Path:
    return WorkspaceSettings().workspace_root.resolve()


def _allowed(path: Path, what: str, *, writes: bool = False) -> Path:
    """A path a run's config names, if it lies under the workspace root; the shipped sample
    notes may be read from, never written to (they are part of the installed package)."""
    resolved = path.resolve()
    if resolved.is_relative_to(_root()):
        return resolved
    if not writes and resolved.is_relative_to(SAMPLE_WORKSPACE.resolve()):
        return resolved
    raise ToolRefused(f"{what} {path} is outside OUTLAST_WORKSPACE_ROOT ({_root()})")


def workspace() -> Path:
    given = _configurable().get("workspace")
    return _allowed(Path(given), "workspace") if given else SAMPLE_WORKSPACE.resolve()


def _data_dir(name: str) -> Path:
    given = _configurable().get(name)
    if given:
        return _allowed(Path(given), name, writes=True)
    return WorkspaceSettings().data_dir.resolve() / name


def _inside(base: Path, relative: str) -> Path:
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise ToolRefused(f"{relative!r} is outside the workspace")
    return target


@tool
async def search_files(pattern: str = "*") -> str:
    """List files in the workspace whose name matches a glob pattern (e.g. "*.md")."""
    base = workspace()
    progress(f"search_files {pattern!r}")

    def scan() -> list[dict[str, Any]]:
        found = sorted(p for p in base.rglob(pattern) if p.is_file())
        return [{"path": str(p.relative_to(base)), "bytes": p.stat().st_size} for p in found[:50]]

    return json.dumps(await asyncio.to_thread(scan))


@tool
async def read_file(path: str) -> str:
    """Read a text file of the workspace; returns its words and lines counts and text."""
    target = _inside(workspace(), path)
    progress(f"read_file {path}")

    def read() -> str:
        with target.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_READ)

    text = await asyncio.to_thread(read)
    return json.dumps(
        {"path": path, "words": len(text.split()), "lines": text.count("\n"), "text": text}
    )


_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate(expression: str) -> float | int:
    """Arithmetic only (numbers, + - * / // % **, parentheses): never ``eval``."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ToolRefused("exponent too large")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ToolRefused(f"not arithmetic: {ast.dump(node)[:60]}")

    if len(expression) > 500:
        raise ToolRefused("expression too long")
    try:
        value: float | int = walk(ast.parse(expression, mode="eval"))
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ToolRefused(f"cannot compute {expression!r}: {exc}") from exc
    return value


@tool
async def compute(expression: str) -> str:
    """Evaluate an arithmetic expression, such as "120 + 85 * 2"."""
    progress(f"compute {expression}")
    return str(evaluate(expression))


@tool
async def write_report(title: str, body: str) -> str:
    """Write a markdown report file; returns its path."""
    folder = _data_dir("reports")
    progress(f"write_report {title!r}")
    name = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "report"

    def write() -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}.md"
        target.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        return target

    return str(await asyncio.to_thread(write))


# -- the effect: an email into the local outbox ------------------------------------------


def _sent_with(outbox: Path, key: str) -> Path | None:
    if not outbox.is_dir():
        return None
    for path in sorted(outbox.glob("*.eml")):
        if f"X-Idempotency-Key: {key}\n" in path.read_text(encoding="utf-8", errors="replace"):
            return path
    return None


async def _reconcile_email(key: str, args: dict[str, Any]) -> Any:
    """Did an unfinished send leave? The outbox (the "provider") knows."""
    outbox = Path(str(args["kwargs"]["outbox"]))
    found = await asyncio.to_thread(_sent_with, outbox, key)
    return ("done", f"sent as {found.name}") if found else "not_done"


@effect(idempotent=False, reconcile=_reconcile_email, name="send_email")
async def _deliver(
    *, to: str, subject: str, body: str, outbox: str, tool_call_id: str, idempotency_key: str
) -> str:
    """Append one message to the outbox. Deliberately not idempotent on its own (a new
    file per call), like most mail APIs: only the ledger keeps it from sending twice."""

    def write() -> str:
        folder = Path(outbox)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.eml"
        message = f"To: {to}\nSubject: {subject}\nX-Idempotency-Key: {idempotency_key}\n\n{body}\n"
        (folder / name).write_text(message, encoding="utf-8")
        return name

    name = await asyncio.to_thread(write)
    return f"sent to {to} as {name}"


@tool
async def send_email(
    to: str, subject: str, body: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> str:
    """Send an email (into the local outbox). Recorded in the effects ledger: never twice."""
    if "@" not in to:
        raise ToolRefused(f"not an email address: {to!r}")
    progress(f"send_email to {to}")
    return await _deliver(
        to=to,
        subject=subject,
        body=body,
        outbox=str(_data_dir("outbox")),
        tool_call_id=tool_call_id,
    )


def outbox_messages(outbox: Path) -> list[str]:
    """The messages an outbox holds (for the demo and the tests)."""
    return [p.read_text(encoding="utf-8") for p in sorted(outbox.glob("*.eml"))]


# -- waiting tools -----------------------------------------------------------------------


@tool
async def ask_human(question: str) -> str:
    """Ask a person and wait (for hours if need be) for the answer."""
    answer = wait_for_human(question, {"type": "string", "minLength": 1, "maxLength": 2000})
    return str(answer)


@effect(idempotent=True, name="start_job")
async def _start_job(*, kind: str, seconds: float, tool_call_id: str, idempotency_key: str) -> str:
    """Submit a job to the local job "provider". The job id carries its own schedule, so
    the probe needs nothing but the id; recorded as an effect so a re-run of the node
    follows the same job instead of starting another."""
    started = int(time.time() * 1000)
    return f"{kind}.{int(seconds * 1000)}.{started}.{idempotency_key[-8:]}"


def probe_job(job_id: str) -> ProbeResult:
    """The provider's status endpoint for a local job: done once its time has passed."""
    try:
        kind, duration, started, _ = job_id.rsplit(".", 3)
        due = (int(started) + int(duration)) / 1000
    except ValueError:
        return ProbeResult(done=False, failed=True, detail=f"unknown job {job_id!r}")
    left = due - time.time()
    if left > 0:
        return ProbeResult(done=False, detail={"remaining_s": round(left, 2)})
    return ProbeResult(done=True, result={"job": job_id, "kind": kind, "output": f"{kind} ready"})


@tool
async def wait_for_job(
    kind: str, seconds: float, tool_call_id: Annotated[str, InjectedToolCallId]
) -> str:
    """Start a long job at the job provider (it takes `seconds`) and wait for its result;
    the run is parked and the provider is probed meanwhile."""
    if not 0 < seconds <= 3600:
        raise ToolRefused("seconds must be in (0, 3600]")
    job_id = await _start_job(kind=kind, seconds=seconds, tool_call_id=tool_call_id)
    result = wait_external("local-jobs", job_id, probe_job, every=0.5)
    return json.dumps(result)


@tool
async def sleep_until(seconds: float | None = None, until: str | None = None) -> str:
    """Sleep until a time (ISO 8601 `until`) or for `seconds`; the run holds nothing."""
    if until is None:
        if seconds is None or not 0 < seconds <= 30 * 86400:
            raise ToolRefused("give `until` or a positive number of `seconds`")
        at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    else:
        at = dt.datetime.fromisoformat(until)
    return f"woke at {sleep_until_node(at)}"


@tool
async def wait_for_event_tool(key: str) -> str:
    """Wait for an outside event: POST /v1/signals/{key} wakes the run."""
    return json.dumps(wait_for_event(key))


wait_for_event_tool.name = "wait_for_event"

OFFLINE_TOOLS: list[BaseTool] = [search_files, read_file, compute, write_report]
WAIT_TOOLS: list[BaseTool] = [ask_human, wait_for_job, sleep_until, wait_for_event_tool]
TOOLS: list[BaseTool] = [*OFFLINE_TOOLS, *WAIT_TOOLS, send_email]
