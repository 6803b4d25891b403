"""``booking``: an effect that can be undone. The graph books a room, then asks a person
whether to keep it; a "no", a cancel, a failure or a LangGraph rollback gives it back.

``book_room`` is a declared effect with a compensation (``@effect(compensate=...)``):
when a run that booked a room ends ``cancelled`` or ``failed``, outlast calls
``cancel_room`` with the booking ``book_room`` returned, once, even across crashes
(``runtime/compensation.py``). The reference agent's ``send_email`` (``tools.py``) has
none on purpose: an email cannot be unsent.

The "hotel" is a JSON file in the data dir (``reservations.json``; a run may name another
folder as ``configurable.reservations``), keyed by idempotency key the way a provider's
API is: booking twice under one key books once, cancelling twice cancels once. That is
what makes the ledger's guarantee exact: a worker killed between a call and its record
calls again with the same key.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from outlast.graph.tools import _data_dir
from outlast.nodes import wait_for_human
from outlast.nodes.effects import effect


class Declined(RuntimeError):
    """The person did not keep the booking: the run fails, and the room is given back."""


def _register() -> Path:
    return _data_dir("reservations") / "reservations.json"


def _update(register: Path, key: str, change: Any) -> dict[str, Any]:
    """Read, change and write the register under a lock (several workers share it)."""
    register.parent.mkdir(parents=True, exist_ok=True)
    with (register.parent / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        book = json.loads(register.read_text()) if register.exists() else {}
        book[key] = change(book.get(key))
        register.write_text(json.dumps(book, indent=1))
        return dict(book[key])


def reservations(register: Path) -> dict[str, dict[str, Any]]:
    """What the register holds (for the demo and the tests)."""
    return json.loads(register.read_text()) if register.exists() else {}


async def cancel_room(
    booking: dict[str, Any], *, room: str, night: str, register: str, idempotency_key: str
) -> dict[str, Any]:
    """Give a booked room back. Idempotent: the booking is found by its own key."""

    def cancel(entry: Any) -> dict[str, Any]:
        if entry is None:
            raise LookupError(f"no booking {booking.get('booking')!r} to cancel")
        return {**entry, "status": "cancelled", "cancelled_with": idempotency_key}

    done = await asyncio.to_thread(_update, Path(register), booking["key"], cancel)
    return {"cancelled": done["booking"]}


@effect(idempotent=True, compensate=cancel_room, name="book_room")
async def reserve(*, room: str, night: str, register: str, idempotency_key: str) -> dict[str, Any]:
    def book(entry: Any) -> dict[str, Any]:
        if entry is not None:  # the same key again: the same booking
            return dict(entry)
        ident = f"{room}/{night}/{idempotency_key[-8:]}"
        return {"booking": ident, "room": room, "night": night, "status": "booked"}

    done = await asyncio.to_thread(_update, Path(register), idempotency_key, book)
    return {"booking": done["booking"], "key": idempotency_key}


@tool
async def book_room(room: str, night: str) -> dict[str, Any]:
    """Book a room for a night. Given back if the run is cancelled or fails."""
    return await reserve(room=room, night=night, register=str(_register()))


class BookingState(TypedDict, total=False):
    room: str
    night: str
    booking: dict[str, Any]
    kept: bool


async def _reserve(state: BookingState) -> dict[str, Any]:
    booking = await book_room.ainvoke(
        {"room": state.get("room", "blue"), "night": state.get("night", "2026-12-24")}
    )
    return {"booking": booking}


async def _confirm(state: BookingState) -> dict[str, Any]:
    booking = state["booking"]["booking"]
    keep = wait_for_human(f"Keep the booking {booking}?", {"type": "boolean"})
    if not keep:
        raise Declined(f"{booking} was not kept")
    return {"kept": True}


def _build() -> Any:
    builder = StateGraph(BookingState)
    builder.add_node("reserve", _reserve)
    builder.add_node("confirm", _confirm)
    builder.add_edge(START, "reserve")
    builder.add_edge("reserve", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile()


graph = _build()
