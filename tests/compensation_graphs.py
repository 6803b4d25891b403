"""Graphs for the compensation tests: a trip booked at a desk (a JSON-lines file, the
booking system's own log), each booking undone by a compensation of its own.

``configurable``: ``desk`` (the file), ``then`` (``fail``: the node raises after booking;
``wait``: it asks a person; ``sleep``: it sleeps a minute, to be cancelled in flight;
anything else: it finishes), ``hotel_fails`` (the hotel's
booking raises: that effect never happened), and the desk's ``<desk>.unbook_fails`` file
holds how many more times cancelling a booking fails (``<desk>.unbook_hangs``: it never
answers; ``<desk>.hotel_hangs``: the hotel books, and its answer never comes back).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from outlast.nodes.effects import effect
from tests.graphs import _single as single


class TripState(TypedDict, total=False):
    booked: list[Any]
    answer: Any


def _write(desk: str, line: dict[str, Any]) -> None:
    with Path(desk).open("a") as f:
        f.write(json.dumps(line) + "\n")


def desk_lines(desk: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in desk.read_text().splitlines()] if desk.exists() else []


async def unbook(
    result: dict[str, Any], item: str, *, desk: str, idempotency_key: str
) -> dict[str, Any]:
    """Cancels a booking by its id: doing it twice under one key cancels it once."""
    if Path(desk + ".unbook_hangs").exists():
        await asyncio.sleep(3600)
    fails = Path(desk + ".unbook_fails")
    left = int(fails.read_text()) if fails.exists() else 0
    if left > 0:
        fails.write_text(str(left - 1))
        raise ConnectionError(f"the desk is down ({left} more)")
    _write(desk, {"op": "unbook", "booking": result["booking"], "key": idempotency_key})
    return {"cancelled": result["booking"]}


@effect(idempotent=True, compensate=unbook)
async def book(item: str, *, desk: str, idempotency_key: str) -> dict[str, Any]:
    _write(desk, {"op": "book", "item": item, "key": idempotency_key})
    if item == "hotel" and Path(desk + ".hotel_hangs").exists():
        await asyncio.sleep(3600)
    return {"booking": f"{item}-{idempotency_key[-8:]}"}


@effect(idempotent=False)
async def send_confirmation(item: str, *, desk: str, idempotency_key: str) -> str:
    """An email: nothing can unsend it, so it declares no compensation."""
    _write(desk, {"op": "email", "item": item, "key": idempotency_key})
    return "sent"


async def _trip(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    conf = config.get("configurable", {})
    desk = str(conf["desk"])
    booked = [await book("flight", desk=desk)]
    await send_confirmation("flight", desk=desk)
    if conf.get("hotel_fails"):
        raise RuntimeError("the hotel refused the card")
    booked.append(await book("hotel", desk=desk))
    if conf.get("then") == "fail":
        raise RuntimeError("the car rental refused the card")
    if conf.get("then") == "sleep":
        await asyncio.sleep(60)
    answer = interrupt("Confirm the trip?") if conf.get("then") == "wait" else None
    return {"booked": booked, "answer": answer}


trip = single(_trip, TripState)
