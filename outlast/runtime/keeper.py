"""The LangGraph stream parts a run was asked to keep, written to its log.

A LangGraph client's stream is a view of the run's log (``api/lg/wire.py``); what a
mode shows that outlast does not log by itself (the state after each step, tasks,
checkpoints, debug, and the ``updates`` parts that carry interrupts) is written here, as
``stream`` events, in order with what the translator writes. The ``events`` mode is not
a stream part: ``events_mode.py`` logs it.
"""

from __future__ import annotations

from typing import Any

from outlast.jsonable import to_jsonable
from outlast.runtime.options import RunOptions
from outlast.runtime.sink import EventSink
from outlast.runtime.translate import Translator
from outlast.store import EventDraft
from outlast.vocabulary import EventType


class Keeper:
    """Keeps ``RunOptions.keep`` (a subgraph's parts only with ``subgraphs``): a part
    that shows interrupts is held for ``park`` (or released, if the run does not park
    after all), the other kept parts go to the sink at once."""

    def __init__(self, options: RunOptions, sink: EventSink, translator: Translator) -> None:
        self.keep_modes = options.keep
        self.subgraphs = options.subgraphs
        self.sink = sink
        self.translator = translator
        self.held: list[EventDraft] = []

    def keep(self, part: dict[str, Any]) -> None:
        mode = part["type"]
        if not self.keep_modes or (part["ns"] and not self.subgraphs):
            return
        data = part["data"]
        if mode == "updates":
            # node updates are node.updated already; the interrupts are not
            if not (isinstance(data, dict) and "__interrupt__" in data):
                return
            data = {"__interrupt__": [_interrupt(i) for i in data["__interrupt__"]]}
        elif mode not in self.keep_modes:
            return
        event: dict[str, Any] = {"mode": mode, "ns": "|".join(part["ns"])}
        event["data"] = data if mode == "updates" else to_jsonable(data)
        if mode == "values" and part.get("interrupts"):
            event["interrupts"] = [_interrupt(i) for i in part["interrupts"]]
        self.translator.flush_messages()  # model deltas already streamed go first
        if "interrupts" in event or mode == "updates":
            # shown only once the run's waits exist (WaitStore.park): a client that sees an
            # interrupt may answer it at once
            self.held.append(EventDraft(EventType.STREAM, event))
            return
        self.sink.put(EventDraft(EventType.STREAM, event))

    def take_held(self) -> list[EventDraft]:
        held, self.held = self.held, []
        return held

    def release_held(self) -> None:
        for draft in self.take_held():
            self.sink.put(draft)


def _interrupt(item: Any) -> dict[str, Any]:
    schema = getattr(item, "response_schema", None)
    return {
        "value": to_jsonable(getattr(item, "value", item)),
        "id": getattr(item, "id", None),
        "response_schema": schema if isinstance(schema, dict) else None,
    }
