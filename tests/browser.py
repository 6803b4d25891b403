"""A real browser (Debian's Chromium, headless, driven by Playwright) and a cuttable link.

No browser is downloaded: the tests use the system's Chromium. Without it they skip with
how to install it, unless ``OUTLAST_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which
installs it), where a missing browser fails.

``CutProxy`` sits between the page and the server: ``cut()`` drops every open connection
and refuses new ones (the server's side of the link is gone, as when a load balancer
restarts), ``restore()`` accepts again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import PATIENCE

# How long a page waits for what it should show (Playwright counts in milliseconds): the
# suite's patience, since the page, its server and the test share two busy cores.
PAGE_WAIT = PATIENCE * 1000

ARTIFACTS = Path(os.environ.get("OUTLAST_ARTIFACTS", Path(__file__).parent.parent / ".artifacts"))
INSTALL = "sudo apt-get install -y chromium  (Debian/Ubuntu; then: pip install -e '.[dev]')"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = f"no Chromium on this machine; install it with: {INSTALL}"
    if os.environ.get("OUTLAST_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@contextlib.asynccontextmanager
async def headless_page(width: int, height: int) -> AsyncIterator[Any]:
    """A page in the system's Chromium, headless; the page's own JavaScript must never
    fail (an uncaught error fails the test at the end)."""
    executable = chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        context = await browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(PAGE_WAIT)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            yield page
        finally:
            await browser.close()
    assert errors == [], errors


def screenshot_path(test: str, moment: str) -> Path:
    folder = ARTIFACTS / "console"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{test}-{moment}.png"


class CutProxy:
    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target)
        except OSError:
            writer.close()
            return
        self._pipes.update((writer, up_writer))

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError):
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._pipes.difference_update((writer, up_writer))

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()  # refuse new connections
        for pipe in list(self._pipes):
            with contextlib.suppress(OSError):
                pipe.transport.abort()  # a reset, not a polite close
        self._pipes.clear()
        await self._server.wait_closed()

    async def restore(self) -> None:
        await self.start()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for pipe in list(self._pipes):
            pipe.transport.abort()
