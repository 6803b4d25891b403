"""Graphs used by the tests (listed in tests/langgraph.json).

``counted`` logs every node execution to a file so a test can count re-executions, and
can stop inside a chosen node (once) so a test can kill the worker exactly there, or hold
in one (``gate_at``) until the file ``gate`` exists, each time it runs, or SIGKILL its own
worker process in one (``kill_at``), each time it runs: a poison pill.
"""

from __future__ import annotations

import asyncio
import operator
import os
import signal
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

NODES = [f"n{i}" for i in range(1, 7)]


class CountedState(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def _counted_node(name: str) -> Any:
    async def node(state: CountedState, config: RunnableConfig) -> dict[str, Any]:
        conf = config.get("configurable", {})
        log = Path(conf["count_file"])
        with log.open("a") as f:
            f.write(name + "\n")
        get_stream_writer()({"entered": name})
        if conf.get("kill_at") == name:  # a poison pill: kills whichever worker runs it
            os.kill(os.getpid(), signal.SIGKILL)
        if conf.get("block_at") == name:
            marker = log.with_suffix(".entered")
            if not marker.exists():
                marker.write_text(name)
                # Stay inside the node until the test kills this process.
                await asyncio.sleep(120)
        if conf.get("gate_at") == name:
            while not Path(conf["gate"]).exists():
                await asyncio.sleep(0.02)
        delay = float(conf.get("step_delay", 0))
        if delay:
            await asyncio.sleep(delay)
        return {"done": [name]}

    return node


def _build_counted() -> Any:
    b = StateGraph(CountedState)
    prev = START
    for name in NODES:
        b.add_node(name, _counted_node(name))
        b.add_edge(prev, name)
        prev = name
    b.add_edge(prev, END)
    return b.compile()


counted = _build_counted()


class SlowState(TypedDict, total=False):
    ticks: Annotated[list[int], operator.add]
    cancelled_in: str


async def _slow(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
    conf = config.get("configurable", {})
    marker = conf.get("marker")
    if marker:
        Path(marker).write_text("in node")
    try:
        await asyncio.sleep(float(conf.get("sleep", 60)))
    except asyncio.CancelledError:
        if marker:
            Path(marker).write_text("cancelled in node")
        raise
    return {"ticks": [1]}


def _build_slow() -> Any:
    b = StateGraph(SlowState)
    b.add_node("wait_a_while", _slow)
    b.add_edge(START, "wait_a_while")
    b.add_edge("wait_a_while", END)
    return b.compile()


slow = _build_slow()


class ChatState(TypedDict, total=False):
    reply: str


async def _chat(state: ChatState, config: RunnableConfig) -> dict[str, Any]:
    words = int(config.get("configurable", {}).get("words", 200))
    text = " ".join(f"w{i}" for i in range(words))
    model = GenericFakeChatModel(messages=iter([AIMessage(content=text)]))
    reply = ""
    async for chunk in model.astream("go"):
        reply += str(chunk.content)
    return {"reply": reply}


def _build_chatty() -> Any:
    b = StateGraph(ChatState)
    b.add_node("talk", _chat)
    b.add_edge(START, "talk")
    b.add_edge("talk", END)
    return b.compile()


chatty = _build_chatty()


async def _boom(state: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("the tool exploded")


def _build_boom() -> Any:
    b = StateGraph(CountedState)
    b.add_node("explode", _boom)
    b.add_edge(START, "explode")
    b.add_edge("explode", END)
    return b.compile()


boom = _build_boom()


class AskState(TypedDict, total=False):
    name: str
    greeting: str


async def _ask(state: AskState) -> dict[str, Any]:
    from langgraph.types import interrupt

    name = interrupt("What is your name?")
    return {"name": name, "greeting": f"hello {name}"}


def _build_asks() -> Any:
    b = StateGraph(AskState)
    b.add_node("ask", _ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile()


asks = _build_asks()


# -- waits ------------------------------------------------------------------------------


class WaitState(TypedDict, total=False):
    got: Any
    more: Any


def _single(fn: Any, state: Any = WaitState) -> Any:
    """A graph of one node, ``fn``."""
    b = StateGraph(state)
    b.add_node("wait", fn)
    b.add_edge(START, "wait")
    b.add_edge("wait", END)
    return b.compile()


async def _typed(state: WaitState) -> dict[str, Any]:
    from outlast.nodes import wait_for_human

    n = wait_for_human("How many?", {"type": "integer", "minimum": 1})
    return {"got": n}


async def _deadline(state: WaitState) -> dict[str, Any]:
    from outlast.nodes import wait_for_human

    return {"got": wait_for_human("Proceed?", timeout=0.3, default="proceed by default")}


async def _sleeper(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    import datetime as dt

    from outlast.nodes import sleep_until

    until = config.get("configurable", {}).get("until")
    when = dt.datetime.fromisoformat(until) if until else dt.datetime.now(dt.UTC)
    return {"got": sleep_until(when)}


async def _eventual(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.nodes import wait_for_event

    keys = config.get("configurable", {}).get("keys", ["go"])
    return {"got": wait_for_event(keys)}


def probe_job(job_id: str) -> dict[str, Any]:
    """The test controls the job through a file: pending, done:<result>, failed, error."""
    state = Path(job_id).read_text().strip()
    with Path(job_id + ".probes").open("a") as f:
        f.write(state + "\n")
    if state.startswith("done:"):
        return {"done": True, "result": state[5:]}
    if state == "failed":
        return {"done": False, "failed": True, "detail": "the provider gave up"}
    if state == "error":
        raise ConnectionError("provider unreachable")
    return {"done": False, "detail": state}


async def _external(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.nodes import wait_external

    job = config.get("configurable", {})["job"]
    return {"got": wait_external("acme", job, probe_job, every=0.1, max_failures=3)}


async def _auth(state: WaitState) -> dict[str, Any]:
    from outlast.nodes import require_auth

    return {"got": require_auth("github")}


human_typed = _single(_typed)
human_deadline = _single(_deadline)
sleeper = _single(_sleeper)
eventual = _single(_eventual)
external = _single(_external)
auth = _single(_auth)


class ParallelState(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def _branch(question: str) -> Any:
    async def node(state: ParallelState) -> dict[str, Any]:
        from outlast.nodes import wait_for_human

        return {"answers": [f"{question}={wait_for_human(question)}"]}

    return node


def _build_parallel() -> Any:
    b = StateGraph(ParallelState)
    b.add_node("left", _branch("left?"))
    b.add_node("right", _branch("right?"))
    b.add_edge(START, "left")
    b.add_edge(START, "right")
    b.add_edge("left", END)
    b.add_edge("right", END)
    return b.compile()


parallel = _build_parallel()


# -- activity ---------------------------------------------------------------------------


async def _busy(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.nodes import heartbeat, progress

    conf = config.get("configurable", {})
    beats = int(conf.get("beats", 5))
    for i in range(beats):
        progress(f"step {i + 1} of {beats}", (i + 1) / beats)
        await asyncio.sleep(float(conf.get("beat_every", 0.05)))
    heartbeat()
    gate = conf.get("gate")
    if gate:  # silent until the test opens the gate
        while not Path(gate).exists():
            await asyncio.sleep(0.02)
    return {"got": beats}


busy = _single(_busy)


# -- budgets ----------------------------------------------------------------------------


class LoopState(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


async def _work(state: LoopState, config: RunnableConfig) -> dict[str, Any]:
    n = state.get("n", 0) + 1
    delay = float(config.get("configurable", {}).get("step_delay", 0))
    if delay:
        await asyncio.sleep(delay)
    message = AIMessage(
        content=f"round {n}",
        tool_calls=[{"name": "lookup", "args": {"i": n}, "id": f"call-{n}"}],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        response_metadata={"model_name": "scripted"},
    )
    return {"n": n, "log": [message.content]} | {"messages": [message]}


class LoopWithMessages(LoopState, total=False):
    messages: Annotated[list[Any], operator.add]


def _again(state: LoopState, config: RunnableConfig) -> str:
    rounds = int(config.get("configurable", {}).get("rounds", 20))
    return "work" if state.get("n", 0) < rounds else END


def _build_looper() -> Any:
    b = StateGraph(LoopWithMessages)
    b.add_node("work", _work)
    b.add_edge(START, "work")
    b.add_conditional_edges("work", _again, ["work", END])
    return b.compile()


looper = _build_looper()


# -- supervision ------------------------------------------------------------------------


def job_probe() -> str:
    """The supervisor's structured check: the test writes the job's state to a file."""
    import os

    return Path(os.environ.get("OUTLAST_TEST_PROBE_FILE", "/nonexistent")).read_text().strip()


async def _quiet(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.nodes import heartbeat, progress

    conf = config.get("configurable", {})
    gate = Path(conf["gate"])
    for i in range(2):
        progress(f"warming up {i + 1}")
        await asyncio.sleep(0.01)
    heartbeat(
        conf.get("note", "now silent"),
        probe=job_probe if conf.get("probe") else None,
        expected=conf.get("expected"),
    )
    try:
        while not gate.exists():  # silent: no sign of life until the gate opens
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        # ``linger``: a node slow to stop (it cleans up), still silent, before it goes
        await asyncio.sleep(float(conf.get("linger", 0)))
        raise
    return {"got": "finished"}


async def _before(state: WaitState) -> dict[str, Any]:
    return {"more": "prepared"}


def _build_quiet() -> Any:
    b = StateGraph(WaitState)
    b.add_node("prepare", _before)
    b.add_node("quiet", _quiet)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "quiet")
    b.add_edge("quiet", END)
    return b.compile()


quiet = _build_quiet()


async def _crawl(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    """Progress in bursts farther apart than the activity lease: silent between them."""
    from outlast.nodes import progress

    conf = config.get("configurable", {})
    steps, gap = int(conf.get("steps", 4)), float(conf.get("gap", 0.5))
    for i in range(steps):
        progress(conf.get("note", f"page {i + 1} of {steps}"), (i + 1) / (steps + 1))
        await asyncio.sleep(gap)
    return {"got": steps}


crawl = _single(_crawl)


class FanState(TypedDict, total=False):
    done: Annotated[list[str], operator.add]
    budget: Any


def _branch_node(name: str) -> Any:
    async def node(state: FanState) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"done": [name]}

    return node


def _build_fanout() -> Any:
    b = StateGraph(FanState)
    for name in ("a", "b", "c"):
        b.add_node(name, _branch_node(name))
        b.add_edge(START, name)
    b.add_node("join", _branch_node("join"))
    for name in ("a", "b", "c"):
        b.add_edge(name, "join")
    b.add_edge("join", END)
    return b.compile()


fanout = _build_fanout()


async def _greedy(state: LoopState, config: RunnableConfig) -> dict[str, Any]:
    """An agent that tries every channel it has to raise its own budget."""
    get_stream_writer()({"outlast_budget": {"steps": {"hard": 1000}}, "budget": "raise"})
    config.get("configurable", {})["budget"] = {"steps": {"hard": 1000}}
    n = state.get("n", 0) + 1
    return {"n": n, "budget": {"steps": {"soft": 1000, "hard": 1000}}}


class GreedyState(LoopState, total=False):
    budget: Any


def _build_greedy() -> Any:
    b = StateGraph(GreedyState)
    b.add_node("work", _greedy)
    b.add_edge(START, "work")
    b.add_conditional_edges("work", _again, ["work", END])
    return b.compile()


greedy = _build_greedy()


async def _pulses(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    """Signs of life through LangGraph's own `runtime.heartbeat()`."""
    from langgraph.runtime import get_runtime

    for _ in range(int(config.get("configurable", {}).get("beats", 5))):
        get_runtime().heartbeat()
        await asyncio.sleep(0.05)
    return {"got": "pulsed"}


def _sync_pulses(state: WaitState) -> dict[str, Any]:
    """The same from a sync node, which LangGraph runs in a thread."""
    import time

    from langgraph.runtime import get_runtime

    for _ in range(5):
        get_runtime().heartbeat()
        time.sleep(0.05)
    return {"more": "pulsed in a thread"}


def _build_pulses() -> Any:
    b = StateGraph(WaitState)
    b.add_node("pulse", _pulses)
    b.add_node("sync_pulse", _sync_pulses)
    b.add_edge(START, "pulse")
    b.add_edge("pulse", "sync_pulse")
    b.add_edge("sync_pulse", END)
    return b.compile()


pulses = _build_pulses()


class ConversationState(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    got: Any


async def _forgetful(state: ConversationState, config: RunnableConfig) -> dict[str, Any]:
    """Goes silent until the supervisor reminds it of its goal."""
    from outlast.nodes import progress

    notes = [m for m in state.get("messages", []) if getattr(m, "name", None) == "supervisor"]
    if notes:
        return {"got": f"back on track after: {notes[-1].content}"}
    progress(config.get("configurable", {}).get("note", "thinking"))
    while True:  # silent, without a sign of life
        await asyncio.sleep(0.05)


def _build_forgetful() -> Any:
    b = StateGraph(ConversationState)
    b.add_node("think", _forgetful)
    b.add_edge(START, "think")
    b.add_edge("think", END)
    return b.compile()


forgetful = _build_forgetful()


async def _spin(state: LoopState) -> dict[str, Any]:
    """Busy without progress: every step leaves the state as it was."""
    return {"log": []}


def _build_spinner() -> Any:
    b = StateGraph(LoopState)
    b.add_node("spin", _spin)
    b.add_edge(START, "spin")
    b.add_conditional_edges("spin", lambda s: "spin", ["spin"])
    return b.compile()


spinner = _build_spinner()


async def _stuck_chat(state: ConversationState) -> dict[str, Any]:
    """Spins without progress until the supervisor asks for another approach."""
    if any(getattr(m, "name", None) == "supervisor" for m in state.get("messages", [])):
        return {"got": "tried another approach"}
    return {}


def _build_stuck_chat() -> Any:
    b = StateGraph(ConversationState)
    b.add_node("try", _stuck_chat)
    b.add_edge(START, "try")
    b.add_conditional_edges("try", lambda s: END if s.get("got") else "try", ["try", END])
    return b.compile()


stuck_chat = _build_stuck_chat()


# -- effects ----------------------------------------------------------------------------


def _outbox(config: RunnableConfig) -> str:
    return str(config.get("configurable", {})["outbox"])


async def _append(outbox: str, line: dict[str, Any]) -> None:
    import json

    with Path(outbox).open("a") as f:
        f.write(json.dumps(line) + "\n")


def _send_email() -> Any:
    from outlast.nodes.effects import effect

    @effect(idempotent=False)
    async def send_email(
        to: str, body: str, *, outbox: str, idempotency_key: str
    ) -> dict[str, Any]:
        await _append(outbox, {"to": to, "body": body, "key": idempotency_key})
        return {"sent": True, "key": idempotency_key}

    return send_email


send_email = _send_email()


def _post_receipt() -> Any:
    from outlast.nodes.effects import effect

    @effect(idempotent=True)
    async def post_receipt(
        to: str, body: str, *, outbox: str, idempotency_key: str
    ) -> dict[str, Any]:
        await _append(outbox, {"to": to, "body": body, "key": idempotency_key})
        return {"posted": True, "key": idempotency_key}

    return post_receipt


post_receipt = _post_receipt()


async def _mail_then_ask(state: WaitState, config: RunnableConfig) -> dict[str, Any]:
    from langgraph.types import interrupt

    conf = config.get("configurable", {})
    body = "hello"
    if conf.get("fickle"):  # a node that computes other arguments when it runs again
        counter = Path(_outbox(config) + ".runs")
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        body = f"hello #{runs}"
    tool = post_receipt if conf.get("idempotent") else send_email
    sent = await tool("ada@example.com", body, outbox=_outbox(config))
    answer = interrupt("Was the email right?") if conf.get("ask", True) else "not asked"
    return {"got": {"sent": sent, "answer": answer}}


mailer = _single(_mail_then_ask)


def _ticket_tool() -> Any:
    from langchain_core.tools import tool

    from outlast.nodes.effects import effect

    @tool
    @effect(idempotent=True)
    async def open_ticket(
        title: str,
        outbox: str,
        tool_call_id: Annotated[str, InjectedToolCallId],
        idempotency_key: str,
    ) -> str:
        """Open a ticket in the tracker."""
        await _append(outbox, {"title": title, "key": idempotency_key, "call": tool_call_id})
        return f"ticket for {title!r}"

    return open_ticket


open_ticket = _ticket_tool()


async def _agent_turn(state: ConversationState, config: RunnableConfig) -> dict[str, Any]:
    from langgraph.types import interrupt

    outbox = _outbox(config)
    call = {
        "name": "open_ticket",
        "args": {"title": "printer on fire", "outbox": outbox},
        "id": "call-42",
        "type": "tool_call",
    }
    result = await open_ticket.ainvoke(call)
    answer = interrupt("ticket opened; anything else?")
    return {"got": {"tool": str(result.content), "answer": answer}}


ticketing = _single(_agent_turn)
