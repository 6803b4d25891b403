"""The pure logic, one function or class at a time: no server, no database, no process.

Each of these decides something the end-to-end tests only see through many layers: which
stream parts become which events (``Translator``), which lost steps a resumed run owes its
log (``missing_updates``), what makes two calls of a side effect the same call
(``effect_key``), what wait an interrupt is (``spec_from_interrupt``) and when the streams
of a run share one read (``Tail``).
"""

from __future__ import annotations

import contextvars
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.types import Interrupt, PregelTask, StateSnapshot
from pydantic import BaseModel

from outlast.api.tail import KEEP, Tail, following, frame_of
from outlast.nodes.activity import ACTIVITY_KEY
from outlast.nodes.effects import effect_key
from outlast.nodes.waits import WAIT_KEY
from outlast.runtime.recovery import LOOKBACK_STEPS, missing_updates
from outlast.runtime.sink import EventSink
from outlast.runtime.translate import Translator
from outlast.runtime.waits import spec_from_interrupt
from outlast.store import Event, EventDraft, Store
from outlast.vocabulary import EventType, WaitKind

# -- Translator --------------------------------------------------------------------------


@dataclass
class _Sink:
    """What the translator hands the run's event sink, in order."""

    drafts: list[EventDraft] = field(default_factory=list)
    steps_over: list[int] = field(default_factory=list)  # len(drafts) at each step_over

    def put(self, draft: EventDraft) -> None:
        self.drafts.append(draft)

    def step_over(self) -> None:
        self.steps_over.append(len(self.drafts))

    @property
    def types(self) -> list[str]:
        return [d.type for d in self.drafts]


def _translator(flush_interval: float = 3600.0) -> tuple[Translator, _Sink]:
    sink = _Sink()
    return Translator(cast(EventSink, sink), flush_interval), sink


def _task_started(task_id: str, name: str, ns: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "tasks", "ns": ns, "data": {"id": task_id, "name": name, "input": {}}}


def _updates(node: str, update: Any, *, cached: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {node: update}
    if cached:
        data["__metadata__"] = {"cached": True}
    return {"type": "updates", "ns": (), "data": data}


def _chunk(text: str, message_id: str = "m1", node: str = "model") -> dict[str, Any]:
    return {
        "type": "messages",
        "ns": (),
        "data": (AIMessageChunk(content=text, id=message_id), {"langgraph_node": node}),
    }


def test_an_update_is_one_node_updated_naming_the_task_that_made_it() -> None:
    translator, sink = _translator()
    translator.feed(_task_started("t1", "plan"))
    translator.feed(_task_started("t2", "plan"))
    translator.feed(_updates("plan", {"steps": ["a"]}))
    translator.feed(_updates("plan", {"steps": ["b"]}))
    assert [d.data for d in sink.drafts] == [
        {"node": "plan", "ns": "", "update": {"steps": ["a"]}, "task": "t1"},
        {"node": "plan", "ns": "", "update": {"steps": ["b"]}, "task": "t2"},
    ]
    assert sink.types == [EventType.NODE_UPDATED] * 2


def _task_ended(task_id: str, name: str, ns: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "tasks", "ns": ns, "data": {"id": task_id, "name": name, "result": {}}}


def test_the_sink_is_told_when_a_root_step_is_over_and_its_checkpoint_is_next() -> None:
    """Only once no task of the root graph is in flight: a sibling still running holds
    the step's checkpoint back, and a subgraph may write none."""
    translator, sink = _translator()
    translator.feed(_task_started("t1", "a"))
    translator.feed(_task_started("t2", "b"))
    translator.feed(_task_started("s1", "inner", ns=("b:t2",)))
    translator.feed(_updates("a", {"x": 1}))
    translator.feed(_task_ended("t1", "a"))
    assert sink.steps_over == []  # b is still running
    translator.feed(_task_ended("s1", "inner", ns=("b:t2",)))
    assert sink.steps_over == []  # a subgraph's step
    translator.feed(_updates("b", {"x": 2}))
    translator.feed(_task_ended("t2", "b"))
    assert sink.steps_over == [2]  # after b's node.updated


async def test_tokens_are_coalesced_per_message_and_flushed_before_the_next_event() -> None:
    translator, sink = _translator(flush_interval=3600.0)  # no timer fires in this test
    for text in ("Hel", "lo", " there"):
        translator.feed(_chunk(text))
    translator.feed(_chunk("other", message_id="m2"))
    assert sink.drafts == []  # held until the interval or another event
    translator.feed(_task_started("t1", "model"))
    assert sink.drafts == []  # a task starting is not an event
    translator.feed(_updates("model", {"messages": ["..."]}))
    assert sink.types == [EventType.MESSAGE_DELTA, EventType.MESSAGE_DELTA, EventType.NODE_UPDATED]
    first, second = sink.drafts[0].data, sink.drafts[1].data
    assert (first["id"], first["content"], first["chunks"], first["node"]) == (
        "m1",
        "Hello there",
        3,
        "model",
    )
    assert (second["id"], second["content"], second["chunks"]) == ("m2", "other", 1)


def test_without_an_interval_every_token_is_its_own_delta() -> None:
    translator, sink = _translator(flush_interval=0)
    translator.feed(_chunk("a"))
    translator.feed(_chunk("b"))
    assert [(d.type, d.data["content"]) for d in sink.drafts] == [
        (EventType.MESSAGE_DELTA, "a"),
        (EventType.MESSAGE_DELTA, "b"),
    ]


def test_whole_messages_are_not_deltas() -> None:
    """A finished message also arrives as the node's update: logging it as a delta too
    would show it twice."""
    translator, sink = _translator(flush_interval=0)
    translator.feed({"type": "messages", "ns": (), "data": (AIMessage(content="done", id="m"), {})})
    assert sink.drafts == []


def test_a_cached_update_is_logged_again_only_if_the_log_lacks_it() -> None:
    translator, sink = _translator()
    translator.logged_tasks = {"t1"}
    translator.feed(_task_started("t1", "gather"))
    translator.feed(_task_started("t2", "gather"))
    translator.feed(_updates("gather", {"n": 1}, cached=True))  # t1: already in the log
    translator.feed(_updates("gather", {"n": 2}, cached=True))  # t2: lost, logged now
    assert [(d.data["task"], d.data["update"]) for d in sink.drafts] == [("t2", {"n": 2})]


def test_interrupts_are_collected_not_logged_and_a_replayed_one_is_not_collected() -> None:
    translator, sink = _translator()
    first = Interrupt(value="name?", id="i1")
    translator.feed(_updates("__interrupt__", (first,)))
    translator.feed(_updates("__interrupt__", (Interrupt(value="again", id="i2"),), cached=True))
    assert translator.interrupts == [first] and sink.drafts == []


def test_custom_data_is_an_event_but_a_sign_of_life_is_not() -> None:
    translator, sink = _translator()
    translator.feed({"type": "custom", "ns": ("sub:1",), "data": {"progress": 3}})
    translator.feed({"type": "custom", "ns": (), "data": {ACTIVITY_KEY: {"note": "step 1"}}})
    assert [(d.type, d.data) for d in sink.drafts] == [
        (EventType.CUSTOM, {"ns": "sub:1", "data": {"progress": 3}})
    ]


# -- missing_updates ---------------------------------------------------------------------


def _task(task_id: str, name: str, result: Any = None, interrupts: tuple[Any, ...] = ()) -> Any:
    return PregelTask(task_id, name, (), None, interrupts, None, result)


def _checkpoint(n: int, run_id: str, tasks: list[Any], parent: int | None) -> StateSnapshot:
    config = {"configurable": {"checkpoint_id": str(n)}}
    parent_config = {"configurable": {"checkpoint_id": str(parent)}} if parent else None
    return StateSnapshot({}, (), config, {"run_id": run_id}, None, parent_config, tuple(tasks), ())  # type: ignore[arg-type]


class _History:
    """A graph's checkpoints by id, as ``aget_state`` walks them."""

    def __init__(self, *snapshots: StateSnapshot) -> None:
        self.by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snapshots}
        self.reads: list[str] = []

    async def aget_state(self, config: Any) -> StateSnapshot:
        checkpoint = config["configurable"]["checkpoint_id"]
        self.reads.append(checkpoint)
        return self.by_id[checkpoint]


async def test_lost_steps_come_back_oldest_first_and_the_walk_stops_at_a_logged_step() -> None:
    history = _History(
        _checkpoint(1, "r", [_task("a", "plan", {"x": 1})], None),  # never read: 2 is logged
        _checkpoint(2, "r", [_task("b", "plan", {"x": 2})], 1),
        _checkpoint(3, "r", [_task("c", "work", {"x": 3}), _task("d", "work", {"x": 4})], 2),
        _checkpoint(4, "r", [_task("e", "work", {"x": 5})], 3),
    )
    resumed = _checkpoint(5, "r", [], 4)
    drafts = await missing_updates(history, resumed, "r", logged={"b", "d"})
    assert [(d.type, d.data["task"], d.data["update"]) for d in drafts] == [
        (EventType.NODE_UPDATED, "c", {"x": 3}),
        (EventType.NODE_UPDATED, "e", {"x": 5}),
    ]
    assert all(d.data["recovered"] is True and d.data["node"] == "work" for d in drafts)
    assert history.reads == ["4", "3", "2"]


async def test_unfinished_interrupted_and_internal_tasks_are_not_owed() -> None:
    history = _History(
        _checkpoint(
            1,
            "r",
            [
                _task("a", "asks", None),  # no result: it did not finish
                _task("b", "asks", {"x": 1}, interrupts=(Interrupt(value="?"),)),
                _task("c", "__start__", {"x": 1}),
                _task("d", "work", {"x": 1}),
            ],
            None,
        )
    )
    drafts = await missing_updates(history, _checkpoint(2, "r", [], 1), "r", logged=set())
    assert [d.data["task"] for d in drafts] == ["d"]


async def test_an_earlier_run_of_the_thread_is_not_this_logs_to_recover() -> None:
    history = _History(
        _checkpoint(1, "earlier", [_task("a", "work", {"x": 1})], None),
        _checkpoint(2, "r", [_task("b", "work", {"x": 2})], 1),
    )
    drafts = await missing_updates(history, _checkpoint(3, "r", [], 2), "r", logged=set())
    assert [d.data["task"] for d in drafts] == ["b"]


async def test_the_walk_back_is_bounded() -> None:
    steps = LOOKBACK_STEPS + 5
    history = _History(
        *(
            _checkpoint(n, "r", [_task(f"t{n}", "work", {"n": n})], n - 1 or None)
            for n in range(1, steps + 1)
        )
    )
    drafts = await missing_updates(history, _checkpoint(steps + 1, "r", [], steps), "r", set())
    assert len(history.reads) == LOOKBACK_STEPS
    assert [d.data["task"] for d in drafts] == [f"t{n}" for n in range(6, steps + 1)]


# -- effect_key --------------------------------------------------------------------------


def _config(
    *, run: str = "r1", ns: str = "agent:8c1f|tools:a6b2", path: Any = ("__pregel_pull", "tools")
) -> dict[str, Any]:
    return {
        "metadata": {"run_id": run, "langgraph_path": path, "langgraph_step": 4},
        "configurable": {"checkpoint_ns": ns},
    }


def _fresh(fn: Any, *args: Any) -> Any:
    """In a new context, as a node's new task starts (its call counter unset)."""
    return contextvars.Context().run(fn, *args)


def test_the_key_of_a_tool_call_is_the_same_when_the_node_runs_again() -> None:
    key = _fresh(effect_key, _config(), "send_email", "call_1")
    assert key.startswith("send_email:") and len(key.split(":", 1)[1]) == 32
    assert _fresh(effect_key, _config(), "send_email", "call_1") == key
    # the task ids in the namespace change on every execution; the key must not
    assert _fresh(effect_key, _config(ns="agent:0000|tools:ffff"), "send_email", "call_1") == key


def test_anything_that_makes_it_another_call_changes_the_key() -> None:
    key = _fresh(effect_key, _config(), "send_email", "call_1")
    others = [
        _fresh(effect_key, _config(), "send_email", "call_2"),
        _fresh(effect_key, _config(), "post_message", "call_1"),
        _fresh(effect_key, _config(run="r2"), "send_email", "call_1"),
        _fresh(effect_key, _config(ns="other:1|tools:2"), "send_email", "call_1"),
        _fresh(effect_key, _config(path=("__pregel_pull", "other")), "send_email", "call_1"),
    ]
    step = _config()
    step["metadata"]["langgraph_step"] = 5
    others.append(_fresh(effect_key, step, "send_email", "call_1"))
    assert key not in others and len(set(others)) == len(others)


def test_without_a_call_id_calls_are_told_apart_by_their_position_in_the_node() -> None:
    def node_calls() -> list[str]:
        return [effect_key(_config(), "charge", None) for _ in range(3)]

    first = _fresh(node_calls)
    assert len(set(first)) == 3  # three calls in one node: three effects
    assert _fresh(node_calls) == first  # the node run again: the same three
    # a counter per tool: another tool's calls do not shift this one's positions
    mixed = _fresh(
        lambda: [effect_key(_config(), "refund", None), effect_key(_config(), "charge", None)]
    )
    assert mixed[1] == first[0]


# -- spec_from_interrupt -----------------------------------------------------------------


class _Answer(BaseModel):
    n: int


def test_a_plain_interrupt_is_a_human_wait_whose_prompt_is_the_value() -> None:
    spec = spec_from_interrupt(Interrupt(value={"question": "name?"}, id="i1"))
    assert (spec.interrupt_id, spec.kind, spec.prompt) == (
        "i1",
        WaitKind.HUMAN,
        {"question": "name?"},
    )
    assert spec.schema is None and spec.wake_at is None and spec.wake_in is None


def test_the_response_schema_becomes_the_waits_json_schema() -> None:
    as_dict = spec_from_interrupt(
        Interrupt(value="n?", id="i", response_schema={"type": "integer", "minimum": 1})
    )
    assert as_dict.schema == {"type": "integer", "minimum": 1}
    as_model = spec_from_interrupt(Interrupt(value="n?", id="i", response_schema=_Answer))
    assert as_model.schema is not None and as_model.schema["properties"]["n"]["type"] == "integer"


def _typed(**wait: Any) -> Interrupt:
    return Interrupt(value={WAIT_KEY: wait}, id="i")


def test_a_timer_wakes_at_its_time() -> None:
    spec = spec_from_interrupt(_typed(kind="timer", until="2030-01-02T03:04:05+00:00"))
    assert spec.kind == WaitKind.TIMER
    assert spec.wake_at == dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def test_an_external_wait_with_a_probe_is_probed_at_once() -> None:
    probe = {"fn": "tests.graphs:job_probe", "every": 5}
    spec = spec_from_interrupt(_typed(kind="external", object={"job": 1}, probe=probe, timeout=60))
    assert (spec.kind, spec.wake_in, spec.probe, spec.object) == (
        WaitKind.EXTERNAL,
        0.0,
        probe,
        {"job": 1},
    )
    no_probe = spec_from_interrupt(_typed(kind="external", timeout=60))
    assert no_probe.wake_in == 60.0 and no_probe.probe is None


def test_an_event_wait_keys_deadline_and_default() -> None:
    spec = spec_from_interrupt(
        _typed(kind="event", keys=["order:1", 2], timeout="2.5", has_default=True, default="no")
    )
    assert spec.kind == WaitKind.EVENT and spec.event_keys == ["order:1", "2"]
    assert spec.wake_in == 2.5 and spec.has_default is True and spec.default == "no"
    assert spec_from_interrupt(_typed(kind="event", keys="order:1")).event_keys is None


def test_an_unknown_kind_is_a_human_wait() -> None:
    spec = spec_from_interrupt(_typed(kind="telepathy", prompt="think of a number"))
    assert spec.kind == WaitKind.HUMAN and spec.prompt == "think of a number"


# -- Tail --------------------------------------------------------------------------------


class _Log:
    """A run's log as the store reads it, counting the reads."""

    def __init__(self, count: int) -> None:
        at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self.events = [Event("r", n, EventType.CUSTOM, {"n": n}, at) for n in range(1, count + 1)]
        self.reads: list[tuple[int, int]] = []

    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]:
        self.reads.append((after, limit))
        return [e for e in self.events if e.seq > after][:limit]

    def store(self) -> Store:
        return cast(Store, self)


def _seqs(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


async def test_streams_at_the_same_cursor_share_one_read() -> None:
    log, tail = _Log(5), Tail()
    assert _seqs(await tail.read(log.store(), "r", 0, 100)) == [1, 2, 3, 4, 5]
    assert _seqs(await tail.read(log.store(), "r", 0, 100)) == [1, 2, 3, 4, 5]
    assert _seqs(await tail.read(log.store(), "r", 3, 1)) == [4]
    assert log.reads == [(0, 100)]


async def test_new_events_are_appended_to_the_tail_read_from_its_end() -> None:
    log, tail = _Log(3), Tail()
    await tail.read(log.store(), "r", 0, 100)
    log.events += _Log(5).events[3:]
    assert await tail.read(log.store(), "r", 3, 100) == log.events[3:]  # past the cache
    assert _seqs(tail.events) == [1, 2, 3, 4, 5] and log.reads == [(0, 100), (3, 100)]


async def test_a_stream_far_behind_reads_the_database_and_leaves_the_tail_alone() -> None:
    log, tail = _Log(10), Tail()
    await tail.read(log.store(), "r", 5, 100)
    assert _seqs(tail.events) == [6, 7, 8, 9, 10]
    assert _seqs(await tail.read(log.store(), "r", 1, 2)) == [2, 3]  # a replay
    assert _seqs(tail.events) == [6, 7, 8, 9, 10] and log.reads[-1] == (1, 2)


async def test_a_read_not_contiguous_with_the_tail_starts_it_over() -> None:
    log, tail = _Log(10), Tail()
    await tail.read(log.store(), "r", 4, 2)  # 5, 6 cached
    assert _seqs(await tail.read(log.store(), "r", 8, 100)) == [9, 10]
    assert _seqs(tail.events) == [9, 10]


async def test_the_tail_keeps_only_the_newest_events() -> None:
    log, tail = _Log(KEEP + 50), Tail()
    await tail.read(log.store(), "r", 0, KEEP + 50)
    assert _seqs(tail.events) == list(range(51, KEEP + 51))


async def test_a_frame_is_encoded_once_while_its_event_is_in_the_tail() -> None:
    log, tail = _Log(3), Tail()
    await tail.read(log.store(), "r", 1, 100)  # the tail holds 2 and 3
    encoded: list[int] = []

    def encode(event: Event) -> bytes:
        encoded.append(event.seq)
        return f"id: {event.seq}\n\n".encode()

    for _ in range(3):
        assert tail.frame(log.events[2], encode) == b"id: 3\n\n"
        tail.frame(log.events[0], encode)  # older than the tail: a replay's, not kept
    assert encoded == [3, 1, 1, 1]


def test_the_streams_of_a_run_share_its_tail_until_the_last_one_leaves() -> None:
    event = _Log(1).events[0]

    def encode(e: Event) -> bytes:
        return b"frame"

    with following("r") as first, following("r") as second, following("other") as other:
        assert first is second and first is not other and first.followers == 2
    with following("r") as again:
        assert again is not first  # the old one was dropped with its last follower
        again.events = [event]
        assert frame_of(event, encode) == b"frame" and again._frames == {1: b"frame"}
    assert frame_of(event, encode) == b"frame"  # followed nowhere: encoded, not cached
