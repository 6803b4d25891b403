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
from typing import Any

from outlast.store import Store
from outlast.store.outbox import Claimed

BodyMaker = Callable[[Store, Claimed], Awaitable[Any]]


async def outlast_body(store: Store, claimed: Claimed) -> Any:
    del store
    return claimed.delivery.payload


DEFAULT: Mapping[str, BodyMaker] = {"outlast": outlast_body}


class NoBodyMaker(Exception):
    """This process cannot make the body of this format (see the module docstring)."""


async def body_of(store: Store, claimed: Claimed, makers: Mapping[str, BodyMaker]) -> bytes:
    maker = makers.get(claimed.webhook.format)
    if maker is None:
        raise NoBodyMaker(f"this process makes no {claimed.webhook.format!r} bodies")
    body = await maker(store, claimed)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
