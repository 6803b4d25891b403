"""Server-Sent Events from a line iterator, as the run's events.

Every event on the wire carries ``id: <seq>`` and an envelope ``{seq, type, time, run_id,
data}``; ``gap`` and ``snapshot`` are announcements outside the log and carry their payload
bare (the gap's id still moves the cursor past the pruned part).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from outlast.vocabulary import TERMINAL_EVENTS


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


async def parse(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    sse_id: str | None = None
    sse_type = "message"
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield _event(sse_id, sse_type, "\n".join(data))
            sse_id, sse_type, data = None, "message", []
            continue
        if line.startswith(":"):
            continue  # keepalive comment
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            sse_id = value
        elif name == "event":
            sse_type = value
        elif name == "data":
            data.append(value)
