"""The conversation's last messages, as the supervisor's model is shown them.

An agent that keeps retrying the same failing call looks, to the evidence tiers, like any
agent that heartbeats without progress: only its last messages tell (the same tool call,
the same error, again and again). So when the model is asked about a run whose graph has
a ``messages`` channel, the conversation's last messages go into the question's
``activity`` as ``messages``, each ``{"role", "content"}``: the role is the message's
type (``human``, ``ai``, ``tool``, ``system``), the content its text, an AI message's tool
calls first, written ``name(arg='value', ...)``. They are quoted data like the notes
(``judge.quoted`` fences them and escapes their angle brackets), never instructions; the
offline judges (``scripted.py``, ``gullible.py``) and the evaluation
(``bench/supervisor_eval.py``) read this one shape.

They come from the run's latest checkpoint, the state a reminder quotes the goal from
(``decisions.goal_of``), read only for a question the model gets (``costs.ask`` asks for
them once it knows a model will answer): a checkpoint read per look would be paid on
every expiry for the few the model sees.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage, ChatMessage, convert_to_messages

log = logging.getLogger(__name__)

# Three call-and-result pairs: enough to see a call repeated with the same error, few
# enough that the conversation does not outweigh the operation's own facts in the tokens
# every question costs.
LAST_MESSAGES = 6
# A tool call, an error or a sentence fits; a tool's whole output (a web page) would make
# the question costly, and its start says what it is.
MESSAGE_CHARS = 500


class Said(TypedDict):
    """One message as the judge reads it."""

    role: str
    content: str


Reader = Callable[[], Awaitable[list[Said]]]


def messages_of(values: Any) -> list[Any]:
    """The state's ``messages`` (none without the channel)."""
    found = values.get("messages") if isinstance(values, Mapping) else None
    return list(found) if isinstance(found, list | tuple) else []


def clip(text: str, chars: int = MESSAGE_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _call(call: Mapping[str, Any]) -> str:
    args = call.get("args")
    if isinstance(args, Mapping):
        args = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"{call.get('name') or '?'}({args or ''})"


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return str(message.role)
    return message.type.removesuffix("MessageChunk").lower()  # ``AIMessageChunk``: ``ai``


def _as_is(message: Any, chars: int) -> Said:
    if isinstance(message, Mapping):
        role = message.get("role") or message.get("type") or "unknown"
        return {"role": str(role), "content": clip(str(message.get("content") or ""), chars)}
    return {"role": "unknown", "content": clip(str(message), chars)}


def said(message: Any, chars: int = MESSAGE_CHARS) -> Said:
    """A message (a LangChain message, or what ``convert_to_messages`` reads) as quoted.
    An AI message's tool calls come first: a retry loop repeats them, and they must
    survive the clip."""
    try:
        [parsed] = convert_to_messages([message])
    except Exception:  # not a message LangChain reads (a tool's dict without its call id)
        return _as_is(message, chars)
    calls = [*getattr(parsed, "tool_calls", []), *getattr(parsed, "invalid_tool_calls", [])]
    text = str(parsed.text)  # text blocks only: an image is not the judge's business
    lines = [_call(c) for c in calls] + ([text] if text else [])
    return {"role": _role(parsed), "content": clip("\n".join(lines), chars)}


def last_messages(values: Any, count: int = LAST_MESSAGES) -> list[Said]:
    return [said(m) for m in messages_of(values)[-count:]]


async def read(values: Callable[[], Awaitable[Any]]) -> list[Said]:
    """The last messages of the state ``values`` returns; none when it cannot be read:
    the model is then asked without them, since they are what it reads, never what the
    ladder rests on."""
    try:
        return last_messages(await values())
    except Exception:
        log.warning("the conversation could not be read for the supervisor", exc_info=True)
        return []


def with_messages(state: Mapping[str, Any], messages: Sequence[Said]) -> dict[str, Any]:
    """``state`` with ``messages`` in its activity. Without any, unchanged: a run without
    a conversation is asked (and cached) as before."""
    if not messages:
        return dict(state)
    return {**state, "activity": {**(state.get("activity") or {}), "messages": list(messages)}}
