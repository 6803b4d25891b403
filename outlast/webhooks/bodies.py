"""What a delivery's body says, by the subscription's ``format``.

``outlast``: the payload the outbox trigger wrote with the event, as it was then
(Standard Webhooks' ``{type, timestamp, data}``). Other formats describe the run in a
face's own terms (LangGraph's run object, A2A's task) and are made at send time by the
face that owns that vocabulary: the API registers its makers with the worker
(``Worker(bodies=...)``), since the runtime cannot import the API. A process without the
maker of a format fails the attempt, and the delivery is retried, by a process that has it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from outlast.config import Settings
from outlast.store import LangGraphStore, RunStore, WaitStore
from outlast.store.outbox import Claimed


class BodyStore(RunStore, WaitStore, LangGraphStore, Protocol):
    """What a body maker may read: the run, its waits, its LangGraph runs."""


# (the store, the claimed delivery, the process's settings: the keys of sealed secrets)
BodyMaker = Callable[[BodyStore, Claimed, Settings], Awaitable[Any]]


@dataclass(frozen=True)
class Body:
    """What a maker returns when its format has headers of its own (A2A's token); a plain
    JSON value is a body without."""

    payload: Any
    headers: dict[str, str] = field(default_factory=dict)


async def outlast_body(store: BodyStore, claimed: Claimed, settings: Settings) -> Any:
    del store, settings
    return claimed.delivery.payload


DEFAULT: Mapping[str, BodyMaker] = {"outlast": outlast_body}


class NoBodyMaker(Exception):
    """This process cannot make the body of this format (see the module docstring)."""


async def body_of(
    store: BodyStore, claimed: Claimed, makers: Mapping[str, BodyMaker], settings: Settings
) -> tuple[bytes, dict[str, str]]:
    maker = makers.get(claimed.webhook.format)
    if maker is None:
        raise NoBodyMaker(f"this process makes no {claimed.webhook.format!r} bodies")
    made = await maker(store, claimed, settings)
    body = made if isinstance(made, Body) else Body(made)
    data = json.dumps(body.payload, separators=(",", ":"), ensure_ascii=False).encode()
    return data, body.headers
