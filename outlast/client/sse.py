"""Server-Sent Events read from a line iterator: the one parser on the client side.

``Frames`` reads the wire format (what ``EventSource`` reads) into ``Frame``s; the terminal
client, the demo's follower, the tests and the benchmarks all read streams through it.
Unlike ``EventSource`` (and ``httpx-sse``), a frame's ``id`` is the id that frame carried,
``None`` when it carried none, rather than the last id seen: the run's stream sends a
``snapshot`` without an id after a ``gap``, and a reader must not take it for a log event.

``parse`` reads the run's events on top of it. Every log event carries ``id: <seq>`` and an
envelope ``{seq, type, time, run_id, data}``; ``gap`` and ``snapshot`` are announcements
outside the log (the gap's id still moves the cursor past the pruned part; the snapshot has
no id and a ``null`` seq).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from outlast.vocabulary import TERMINAL_EVENTS


@dataclass(frozen=True, slots=True)
class Frame:
    """One event as it was sent."""

    event: str = "message"
    data: str | None = None  # its data lines joined by newlines; None: it had none
    id: str | None = None  # the id it carried, if any
    retry: int | None = None  # a reconnection hint (milliseconds)


class Frames:
    """Lines in, frames out: ``feed`` each line (without its line break); a frame is
    complete at the blank line after it. Comments (keepalives) are skipped; a frame with
    nothing but a ``retry`` hint is one too, so a reader can see that the stream opened."""

    def __init__(self) -> None:
        self._fields: dict[str, str] = {}
        self._data: list[str] = []

    def feed(self, line: str) -> Frame | None:
        if line == "":
            fields, data = self._fields, self._data
            self._fields, self._data = {}, []
            if not fields and not data:
                return None
            retry = fields.get("retry", "")
            return Frame(
                fields.get("event") or "message",
                "\n".join(data) if data else None,
                fields.get("id"),
                int(retry) if retry.isdigit() else None,
            )
        if line.startswith(":"):
            return None  # a comment: the server's keepalive
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name in ("event", "id", "retry"):
            self._fields[name] = value
        return None


async def frames(lines: AsyncIterable[str]) -> AsyncIterator[Frame]:
    """The frames of a stream (``response.aiter_lines()``, say)."""
    reader = Frames()
    async for line in lines:
        frame = reader.feed(line)
        if frame is not None:
            yield frame


@dataclass(frozen=True)
class Event:
    type: str
    seq: int | None
    data: dict[str, Any] = field(default_factory=dict)
    time: str | None = None

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


def _event(sse_id: str | None, sse_type: str, raw: str) -> Event:
    try:
        payload: Any = json.loads(raw)
    except ValueError:
        payload = raw
    seq = int(sse_id) if sse_id is not None and sse_id.isdigit() else None
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict) and "seq" in payload:
        inner: dict[str, Any] = payload["data"]
        kind = str(payload.get("type") or sse_type)
        raw_seq = payload.get("seq")
        return Event(kind, raw_seq if isinstance(raw_seq, int) else seq, inner, payload.get("time"))
    data = payload if isinstance(payload, dict) else {"value": payload}
    return Event(sse_type, seq, data)


async def parse(lines: AsyncIterable[str]) -> AsyncIterator[Event]:
    """The run's events (and its ``gap`` and ``snapshot``) in a stream's lines."""
    async for frame in frames(lines):
        if frame.data is not None:
            yield _event(frame.id, frame.event, frame.data)
