"""What a person following a run sees: log lines, and on a terminal a live status line.

Without a terminal (a pipe, a file, a test) there is no live region: everything is a plain
line, so the output reads the same in a log file as it did on screen.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from outlast.client.render import duration, wait_summary


class Display:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.live_mode = console.is_terminal
        self._live: Live | None = None
        self._paused = 0
        self._midline = False
        self._message = ""
        self.run_id: str | None = None
        self.status = "connecting"
        self.node: str | None = None
        self.wait: dict[str, Any] | None = None
        self._status_since = time.monotonic()

    def __enter__(self) -> Display:
        if self.live_mode:
            self._live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end_inline()
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __rich__(self) -> Text:
        """The live status line, re-rendered on every refresh so durations tick."""
        line = Text()
        if self.wait is not None:
            line.append(wait_summary(self.wait), style="bold yellow")
        else:
            line.append(self.status, style="bold cyan")
            line.append(f"  {duration(time.monotonic() - self._status_since)}", style="dim")
            if self.node:
                line.append(f"  node {self.node}")
        if self._message:
            tail = self._message.replace("\n", " ")[-60:]
            line.append(f"  {tail}", style="italic dim")
        return line

    def set_status(self, status: str) -> None:
        if status != self.status:
            self.status = status
            self._status_since = time.monotonic()

    def line(self, text: str, style: str | None = None, seq: int | None = None) -> None:
        self._end_inline()
        out = Text()
        if seq is not None:
            out.append(f"#{seq} ", style="dim")
        out.append(text, style=style)
        self.console.print(out, soft_wrap=True)

    def notice(self, text: str) -> None:
        self.line(text, style="yellow")

    def inline(self, text: str) -> None:
        """Model text as it streams: appended on one line without a terminal, shown in the
        status line with one (printing partial lines would fight the live region)."""
        if not text:
            return
        if self.live_mode:
            self._message += text
            return
        if not self._midline:
            self.console.print(Text("  ", style="dim"), end="", soft_wrap=True)
        self.console.print(Text(text), end="", soft_wrap=True)
        self._midline = True

    def message_done(self) -> None:
        if self.live_mode and self._message:
            text, self._message = self._message, ""
            self.line(f"  {text}", style="italic")
        self._end_inline()

    def _end_inline(self) -> None:
        if self._midline:
            self._midline = False
            self.console.print(soft_wrap=True)

    def pause(self) -> None:
        """Stop redrawing while a person types an answer."""
        self._end_inline()
        self._paused += 1
        if self._live is not None and self._paused == 1:
            self._live.stop()

    def resume(self) -> None:
        self._paused -= 1
        if self._live is not None and self._paused == 0:
            self._live.start()
