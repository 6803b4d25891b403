"""The graphs every server of the peers comparison serves, from this folder's
langgraph.json: outlast, Aegra and ``langgraph dev`` load this same file.

It imports LangGraph only (Aegra's environment has no outlast), with one exception a user
of outlast would make too: the side effect of ``slow`` goes through outlast's effects
ledger when outlast is importable, and is a plain call elsewhere, since the peers have no
ledger to put it through. Every effect and every completion is appended to a file named by
``configurable.record`` (one line per call, with the run's ``key``), so the bench counts
what each server really did, whatever its own API reports. The ledgered effect is declared
as a user would declare an email: not idempotent, with a ``reconcile`` that asks the
provider (here the file) whether a call a crash cut short went out.

- ``ten``   ten trivial nodes in a line: the cost of the runtime itself.
- ``ask``   ``interrupt()`` for an answer, then a last node that records the completion.
- ``slow``  ``send`` performs the side effect, then keeps working ``configurable.delay``
            seconds in the same node (a crash there is what makes a runtime without a
            ledger send twice); then ``configurable.ticks`` nodes each wait
            ``configurable.tick`` seconds and stream one custom event; ``done`` records
            the completion.
"""

from __future__ import annotations

import asyncio
import importlib.util
import operator
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict  # pydantic (the LangGraph servers) needs it on 3.11


def _append(config: RunnableConfig, line: str) -> None:
    """One ``write`` of one short line to a file opened with O_APPEND: lines from several
    processes never interleave. Called in a thread: ``langgraph dev`` refuses blocking
    calls in async nodes, and a file is blocking."""
    path = config.get("configurable", {}).get("record")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


class TenState(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def _step(name: str) -> Callable[[TenState], Awaitable[dict[str, Any]]]:
    async def node(state: TenState) -> dict[str, Any]:
        return {"steps": [name]}

    return node


def _line(state: type[Any], nodes: list[tuple[str, Any]]) -> Any:
    builder: StateGraph[Any] = StateGraph(state)
    previous = START
    for name, fn in nodes:
        builder.add_node(name, fn)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile()


ten = _line(TenState, [(f"n{i}", _step(f"n{i}")) for i in range(10)])


class AskState(TypedDict, total=False):
    key: str
    answer: str


async def _ask(state: AskState) -> dict[str, Any]:
    return {"answer": interrupt("Go on?")}


async def _finish(state: AskState, config: RunnableConfig) -> dict[str, Any]:
    await asyncio.to_thread(_append, config, f"done {state.get('key', '')}")
    return {}


ask = _line(AskState, [("ask", _ask), ("finish", _finish)])


class SlowState(TypedDict, total=False):
    key: str
    ticks: Annotated[list[int], operator.add]


async def _effect(key: str, config: RunnableConfig) -> None:
    await asyncio.to_thread(_append, config, f"effect {key}")


# outlast's ledger where it runs under outlast; a plain call elsewhere. (Asked by name,
# not by catching ImportError, which would also hide a wrong import under outlast.)
if importlib.util.find_spec("outlast") is None:  # the peers' environments
    send_effect = _effect
else:
    from outlast.nodes.effects import effect as _ledgered

    async def _happened(key: str, args: dict[str, Any]) -> Any:
        """What a user asks the provider after a crash cut a call short: did it go out?
        Here the provider is the record file."""
        who, record = args["args"]
        lines = await asyncio.to_thread(_lines, record)
        return ("done", None) if f"effect {who}" in lines else "not_done"

    def _lines(record: str) -> list[str]:
        path = Path(record)
        return path.read_text().splitlines() if path.exists() else []

    @_ledgered(idempotent=False, reconcile=_happened)
    async def _send(key: str, record: str, idempotency_key: str = "") -> None:
        await asyncio.to_thread(_append, {"configurable": {"record": record}}, f"effect {key}")

    async def send_effect(key: str, config: RunnableConfig) -> None:
        await _send(key, config.get("configurable", {}).get("record", ""))


def _options(config: RunnableConfig) -> dict[str, Any]:
    return dict(config.get("configurable", {}))


async def _send_node(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
    await send_effect(state.get("key", ""), config)
    await asyncio.sleep(float(_options(config).get("delay", 2.0)))
    return {}


def _tick(i: int) -> Callable[[SlowState, RunnableConfig], Awaitable[dict[str, Any]]]:
    async def tick(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
        if i >= int(_options(config).get("ticks", 5)):
            return {}
        await asyncio.sleep(float(_options(config).get("tick", 0.2)))
        get_stream_writer()({"tick": i, "key": state.get("key", "")})
        return {"ticks": [i]}

    return tick


async def _done(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
    await asyncio.to_thread(_append, config, f"done {state.get('key', '')}")
    return {}


MAX_TICKS = 10
slow = _line(
    SlowState,
    [("send", _send_node)] + [(f"t{i}", _tick(i)) for i in range(MAX_TICKS)] + [("done", _done)],
)
