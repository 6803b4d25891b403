"""One person following one run: events to the screen, waits to the prompt, the end to an
exit code."""

from __future__ import annotations

import sys
from typing import Any

from outlast.client.api import Api
from outlast.client.display import Display
from outlast.client.follow import follow
from outlast.client.prompt import ANSWERABLE, LineReader, Prompter
from outlast.client.render import compact, error_text, event_line, progress_node, result_text
from outlast.client.sse import Event
from outlast.vocabulary import ANSWERABLE_KINDS, EventType, Frame

EXIT_CODES: dict[str, int] = {
    EventType.RUN_COMPLETED: 0,
    EventType.RUN_FAILED: 1,
    EventType.RUN_CANCELLED: 2,
}
_STYLES: dict[str, str] = {
    EventType.RUN_COMPLETED: "bold green",
    EventType.RUN_FAILED: "bold red",
    EventType.RUN_CANCELLED: "bold magenta",
    EventType.WAIT_STARTED: "yellow",
    EventType.WAIT_ENDED: "yellow",
    Frame.GAP: "bold yellow",
    EventType.RUN_REQUEUED: "yellow",
    EventType.RUN_RELEASED: "yellow",
    EventType.NODE_UPDATED: "green",
}
# Waits a person ends with `outlast answer` (the client prompts only for human and auth).
ANSWERED_BY_INPUT = ANSWERABLE_KINDS
_RUNNING = frozenset(
    {
        EventType.RUN_STARTED,
        EventType.RUN_RESUMED,
        EventType.NODE_UPDATED,
        EventType.CUSTOM,
        EventType.MESSAGE_DELTA,
    }
)


class Session:
    def __init__(
        self, api: Api, display: Display, prompter: Prompter, snapshot: dict[str, Any]
    ) -> None:
        self._api = api
        self._display = display
        self._prompter = prompter
        self._run_id = str(snapshot.get("id"))
        # Events up to here were history when we attached: a wait among them is only asked
        # about if it was still the open one then.
        self._history_until = int(snapshot.get("last_seq") or 0)
        self._open_at_attach = {w.get("id") for w in open_waits(snapshot)}
        self._waits: dict[Any, dict[str, Any]] = {w.get("id"): w for w in open_waits(snapshot)}
        display.set_status(str(snapshot.get("status") or "?"))

    def notice(self, text: str) -> None:
        self._display.notice(text)

    def event(self, event: Event) -> None:
        d = event.data
        if event.type == EventType.MESSAGE_DELTA:
            self._display.set_status("running")
            self._display.inline(str(d.get("content") or ""))
            return
        self._display.message_done()
        self._track(event)
        line = event_line(event)
        if line is not None:
            in_log = event.type not in (Frame.GAP, Frame.SNAPSHOT)
            self._display.line(
                line, style=_STYLES.get(event.type), seq=event.seq if in_log else None
            )
        if event.type == EventType.WAIT_STARTED and isinstance(d.get("wait"), dict):
            self._wait_started(d["wait"], event.seq)
        elif event.type == EventType.WAIT_ENDED:
            self._prompter.wait_ended(d.get("wait_id"))
        elif event.type == Frame.SNAPSHOT:
            # After a gap the waits' own events may be among the pruned ones.
            for wait in open_waits(d):
                self._wait_started(wait, None)

    def _track(self, event: Event) -> None:
        d, display = event.data, self._display
        if event.type in _RUNNING:
            display.set_status("running")
        elif isinstance(d.get("status"), str):
            display.set_status(d["status"])
        if event.type == EventType.NODE_UPDATED and d.get("node"):
            display.node = str(d["node"])
        elif event.type == EventType.CUSTOM:
            display.node = progress_node(event) or display.node
        elif event.type == EventType.WAIT_STARTED and isinstance(d.get("wait"), dict):
            self._waits[d["wait"].get("id")] = d["wait"]
            display.set_status("waiting")
        elif event.type == EventType.WAIT_ENDED:
            self._waits.pop(d.get("wait_id"), None)
        elif event.type == Frame.SNAPSHOT:
            self._waits = {w.get("id"): w for w in open_waits(d)}
        if event.terminal:
            self._waits.clear()
        # The status line shows the oldest wait still open (parallel branches may add more).
        display.wait = next(iter(self._waits.values()), None)

    def _wait_started(self, wait: dict[str, Any], seq: int | None) -> None:
        history = seq is not None and seq <= self._history_until
        if history and wait.get("id") not in self._open_at_attach:
            return  # ended before we attached
        if wait.get("kind") in ANSWERABLE and self._prompter.can_ask:
            self._prompter.wait_started(wait)
        elif wait.get("kind") in ANSWERED_BY_INPUT:
            if wait.get("prompt") is not None:
                self._display.line(f"  asks: {compact(wait['prompt'], 500)}", style="yellow")
            self._display.line(
                f"  answer with: outlast answer {self._run_id} VALUE --server {self._api.server}",
                style="dim",
            )


def open_waits(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    waits = snapshot.get("waits")
    if isinstance(waits, list) and waits:
        return [w for w in waits if isinstance(w, dict)]
    wait = snapshot.get("wait")
    return [wait] if isinstance(wait, dict) else []


def report(terminal: Event) -> int:
    """The outcome: the result on stdout (it is what a script wants), the rest on stderr."""
    d = terminal.data
    if terminal.type == EventType.RUN_COMPLETED:
        sys.stdout.write(result_text(d.get("result")) + "\n")
        sys.stdout.flush()
    elif terminal.type == EventType.RUN_FAILED:
        sys.stderr.write(f"run failed: {error_text(d.get('error') or d)}\n")
    else:
        sys.stderr.write(f"run cancelled: {d.get('reason') or 'no reason given'}\n")
    return EXIT_CODES.get(terminal.type, 1)


async def follow_run(
    api: Api, display: Display, snapshot: dict[str, Any], input_fd: int | None
) -> int:
    run_id = str(snapshot["id"])
    reader = LineReader(input_fd) if input_fd is not None else None
    prompter = Prompter(api, run_id, display, reader)
    session = Session(api, display, prompter, snapshot)
    with display:
        try:
            terminal = await follow(api, run_id, session)
        finally:
            await prompter.close()
    return report(terminal)
