"""What a client sees, recorded step by step, normalised so that two servers can be
compared: a scenario drives ``langgraph_sdk`` clients through a ``Probe`` and every call
it makes through the probe becomes a step.

A step is the call's outcome as a client sees it: the body it got (``{"ok": …}``), or
the HTTP status it was refused with (``{"status": …}``, with the ``detail`` when the
text is the app's own, an auth handler's ``HTTPException`` say), or the exception it
raised otherwise (``{"raised": …}``); a stream is the sequence of its events, each with
its name and data. Before it is recorded a value is normalised: every UUID (thread, run,
assistant, checkpoint, cron and message ids, wherever they appear in a string) becomes
``<id:N>``, N in the order this scenario first saw it, and every timestamp becomes
``<time>``. Two servers that show the same things in the same relations (this run's
thread is that thread) record the same steps.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from langgraph_sdk.client import LangGraphClient

T = TypeVar("T")

# UUIDs, and the 32 hex digits of interrupt ids (a hash of the task's checkpoint path)
UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])",
    re.I,
)
# a chat model's reply id when the model was invoked, not streamed (differences.NORMALISED)
INVOKED_ID = re.compile(r"lc_run--<id:\d+>-\d+")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")

TOKENS = {
    "admin": "admin-token",
    "user1": "user1-token",
    "user2": "user2-token",
}

View = Callable[[Any], Any]


@dataclass
class Step:
    name: str
    value: Any


@dataclass
class Probe:
    """One scenario's session with one server."""

    scenario: str
    url: str
    # keys left out of what is recorded, wherever they are (differences.UNCOMPARED on
    # every server, differences.ADDITIVE on outlast's too), and the ones met
    ignore: frozenset[str] = frozenset()
    steps: list[Step] = field(default_factory=list)
    ignored: set[str] = field(default_factory=set)
    _ids: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, LangGraphClient] = field(default_factory=dict)

    # -- clients ----------------------------------------------------------------------

    def client(self, who: str = "admin", authorization: str | None = None) -> LangGraphClient:
        """The SDK client of ``who`` (a user of the app's auth.py), or one sending the
        ``authorization`` header given (``""``: none at all)."""
        key = who if authorization is None else f"raw:{authorization}"
        if key not in self._clients:
            if authorization is None:
                headers = {"Authorization": f"Bearer {TOKENS[who]}"}
            else:
                headers = {"Authorization": authorization} if authorization else {}
            # a connection per request: a server closes a keep-alive connection idle for
            # 5 s (uvicorn's default), and a request sent on it as it closes fails
            # (RemoteProtocolError, ReadError) on a busy machine, whichever the server
            raw = httpx.AsyncClient(
                base_url=self.url,
                headers=headers,
                timeout=60,
                limits=httpx.Limits(max_keepalive_connections=0),
                transport=httpx.AsyncHTTPTransport(retries=3),
            )
            self._clients[key] = LangGraphClient(raw)
        return self._clients[key]

    @property
    def admin(self) -> LangGraphClient:
        return self.client("admin")

    async def close(self) -> None:
        for c in self._clients.values():
            await c.aclose()

    # -- normalising -------------------------------------------------------------------

    def norm(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key in sorted(value, key=str):
                if key in self.ignore:
                    self.ignored.add(key)
                    continue
                out[self.norm(key)] = self.norm(value[key])
            return out
        if isinstance(value, (list, tuple)):
            return [self.norm(v) for v in value]
        if isinstance(value, str):
            value = TIME.sub("<time>", UUID.sub(self._placeholder, value))
            if "invoked-id-suffix" in self.ignore and INVOKED_ID.fullmatch(value):
                self.ignored.add("invoked-id-suffix")
                value = value.rsplit("-", 1)[0]
            return value
        return value

    def _placeholder(self, match: re.Match[str]) -> str:
        raw = match.group(0).lower()
        if raw not in self._ids:
            self._ids[raw] = f"<id:{len(self._ids) + 1}>"
        return self._ids[raw]

    def forget_ids(self) -> None:
        """Number the ids met from here on anew (steps that share no ids: one that shows
        an extra id does not shift the numbers of the next)."""
        self._ids.clear()

    def record(self, name: str, value: Any) -> None:
        self.steps.append(Step(name, self.norm(value)))

    # -- steps -------------------------------------------------------------------------

    async def call(
        self, name: str, work: Awaitable[T], view: View | None = None, detail: bool = False
    ) -> T | None:
        """Await an SDK call; record what it gave (through ``view``) or how it failed."""
        try:
            result = await work
        except httpx.HTTPStatusError as exc:
            self.record(name, refusal(exc.response, detail))
            return None
        except Exception as exc:
            self.record(name, {"raised": type(exc).__name__})
            return None
        self.record(name, {"ok": view(result) if view else result})
        return result

    async def stream(
        self, name: str, parts: AsyncIterator[Any], view: View | None = None
    ) -> list[Any]:
        """Read a stream to its end; record each event (name, and data through ``view``)."""
        got: list[Any] = []
        events: list[Any] = []
        try:
            async for part in parts:
                got.append(part)
                events.append([part.event, view(part) if view else part.data])
        except httpx.HTTPStatusError as exc:
            events.append(["<refused>", refusal(exc.response, False)])
        except Exception as exc:
            events.append(["<raised>", type(exc).__name__])
        self.record_events(name, events)
        return got

    def record_events(self, name: str, events: list[Any]) -> None:
        """A stream's ``[event, data]`` pairs, as ``stream`` records them."""
        kept = []
        for event, data in events:
            if f"event:{event}" in self.ignore:
                self.ignored.add(f"event:{event}")
                continue
            kept.append([event, data])
        self.record(name, coalesced(kept))

    async def http(
        self,
        name: str,
        method: str,
        path: str,
        *,
        who: str | None = "admin",
        headers: Iterable[str] = (),
        **kwargs: Any,
    ) -> httpx.Response:
        """A raw request (what ``client.http`` cannot show: headers, non-JSON bodies);
        records the status, the named headers and the body."""
        sent = {"Authorization": f"Bearer {TOKENS[who]}"} if who else {}
        async with httpx.AsyncClient(base_url=self.url, timeout=60) as raw:
            response = await raw.request(method, path, headers=sent, **kwargs)
        shown: dict[str, Any] = {"status": response.status_code}
        for header in headers:
            shown[header] = response.headers.get(header)
        if response.status_code < 400:
            try:
                shown["body"] = response.json()
            except ValueError:
                shown["body"] = response.text
        self.record(name, shown)
        return response


def refusal(response: httpx.Response, detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"status": response.status_code}
    if detail:
        try:
            body = response.json()
        except ValueError:
            body = {}
        out["detail"] = body.get("detail") if isinstance(body, dict) else None
    return out


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def coalesced(events: list[Any]) -> list[Any]:
    """A stream's model output with its chunks joined: consecutive ``messages`` chunks of
    one message become one (content and tool call chunks joined, the last one's
    ``chunk_position``), and of consecutive ``messages/partial`` of one message the last
    is kept. Where a model's tokens are cut is not compared: outlast sends each token as
    the model makes it to a client that follows the run live, and a client that replays
    the log (or joins after the first tokens) gets them in the pieces the log keeps; the
    same text either way, each token once."""
    out: list[Any] = []
    for name, data in events:
        if out and _same_message(out[-1], name, data):
            if name.startswith("messages/partial"):
                out[-1] = [name, data]
                continue
            before, after = out[-1][1][0], data[0]
            joined = dict(before)
            joined["content"] = str(before.get("content", "")) + str(after.get("content", ""))
            for key in ("tool_call_chunks", "tool_calls", "invalid_tool_calls"):
                joined[key] = [*(before.get(key) or []), *(after.get(key) or [])]
            joined["chunk_position"] = after.get("chunk_position")
            out[-1] = [name, [joined, data[1]]]
            continue
        out.append([name, data])
    return out


def _message_id(name: str, data: Any) -> Any:
    if name.startswith("messages/partial") and isinstance(data, list) and data:
        return data[0].get("id") if isinstance(data[0], dict) else None
    if name.split("|")[0] == "messages" and isinstance(data, list) and len(data) == 2:
        first = data[0]
        if isinstance(first, dict) and first.get("type") == "AIMessageChunk":
            return first.get("id")
    return None


def _same_message(last: list[Any], name: str, data: Any) -> bool:
    key = _message_id(name, data)
    return key is not None and last[0] == name and _message_id(last[0], last[1]) == key
