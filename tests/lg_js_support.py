"""What the tests of LangGraph's JavaScript clients share (``tests/test_lg_js.py``, the
legacy ``useStream`` and the SDK's ``Client``; ``tests/test_lg_js_v2.py``, the protocol-v2
``useStream`` of ``@langchain/react``): ``npm ci`` and the page builds of ``tests/js``, a
real ``outlast serve``, the built page on its own origin, and the page's recorders.

``npm ci`` runs once per lock file (a stamp in ``node_modules`` remembers it) and a page is
built once per source change, both under a file lock so parallel workers share them. Without
Node (or without Chromium, for the page tests) the tests skip, unless
``OUTLAST_REQUIRE_BROWSER=1`` or ``OUTLAST_REQUIRE_NODE=1``: then they fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.browser import PAGE_WAIT, screenshot_path
from tests.procs import kill, start_server

JS = Path(__file__).parent / "js"
LOCK = JS / "package-lock.json"
AI = "[data-testid=message][data-type=ai]"


# --- Node, npm ci and the page builds -----------------------------------------------------

CHAT_REPLY = "echo(hi) w0 w1 w2 w3 w4 w5"  # lg_chat's reply to "hi" with the default 6 words
PLAN_QUESTION = {"question": "Approve the plan?", "plan": "plan for x"}


def _required() -> bool:
    return "1" in (
        os.environ.get("OUTLAST_REQUIRE_NODE"),
        os.environ.get("OUTLAST_REQUIRE_BROWSER"),
    )


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            h.update(str(file.relative_to(JS)).encode())
            h.update(file.read_bytes())
    return h.hexdigest()[:16]


def _run(command: list[str], what: str, timeout: float, **env: str) -> None:
    try:
        done = subprocess.run(
            command,
            cwd=JS,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **env},
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{what} took over {timeout}s: {exc.stdout}\n{exc.stderr}") from None
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


@functools.cache
def prepare_js(page: str) -> str:
    """``npm ci`` when node_modules does not match the lock, the build of ``tests/js/<page>``
    when its sources changed; returns the path of ``node``."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        message = "no Node.js/npm on this machine; install Node 20+ (apt-get install -y nodejs npm)"
        if _required():
            pytest.fail(message)
        pytest.skip(message)
    folder = JS / page
    with (JS / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers wait for the first one
        installed = JS / "node_modules" / f".outlast-lock-{_digest(LOCK)}"
        if not installed.exists():
            _run([npm, "ci", "--no-audit", "--no-fund"], "npm ci in tests/js", timeout=300)
            installed.touch()
        sources = _digest(
            LOCK,
            JS / "vite.config.mjs",
            JS / "common.jsx",
            folder / "index.html",
            folder / "main.jsx",
        )
        built = folder / "dist" / f".outlast-build-{sources}"
        if not built.exists():
            vite = [node, "node_modules/.bin/vite", "build"]
            _run(vite, f"vite build of tests/js/{page}", 120, OUTLAST_PAGE=page)
            built.touch()
    return node


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    """``outlast serve`` on SQLite in ``folder`` with tests/langgraph.json (lg_chat, lg_hitl);
    its URL."""
    proc, url = start_server(f"sqlite:///{folder / 'outlast.db'}", folder / "server.log")
    try:
        yield url
    finally:
        kill(proc, signal.SIGTERM)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def page_server(page: str) -> Iterator[str]:
    """The built ``tests/js/<page>`` on its own port: another origin than the API."""
    handler = functools.partial(_Quiet, directory=str(JS / page / "dist"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --- Driving a page -----------------------------------------------------------------------


class Traffic:
    """What the page asked the API (Playwright sees every request, preflights excluded)."""

    def __init__(self, api_url: str) -> None:
        self.api = urlsplit(api_url).netloc
        self.requests: list[Any] = []

    def record(self, request: Any) -> None:
        if urlsplit(request.url).netloc == self.api and request.method != "OPTIONS":
            self.requests.append(request)

    async def calls(self, since: int = 0) -> list[dict[str, Any]]:
        out = []
        for r in self.requests[since:]:
            headers = await r.all_headers()
            out.append(
                {
                    "method": r.method,
                    "path": urlsplit(r.url).path,
                    "query": urlsplit(r.url).query,
                    "last_event_id": headers.get("last-event-id"),
                    "body": json.loads(r.post_data) if r.post_data else None,
                }
            )
        return out


async def until(page: Any, traffic: Traffic, what: str, waiting: Any) -> None:
    """Awaits a Playwright wait; on its time-out, fails with what the page showed and asked."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await waiting
    except PlaywrightTimeout:
        shown = await page.evaluate(
            "() => ({status: document.querySelector('[data-testid=status]')?.textContent,"
            " error: document.querySelector('[data-testid=error]')?.textContent,"
            " messages: [...document.querySelectorAll('[data-testid=message]')]"
            ".map(m => m.textContent), texts: window.__aiTexts})"
        )
        calls = [(c["method"], c["path"], c["last_event_id"]) for c in await traffic.calls()]
        raise AssertionError(
            f"timed out waiting for {what}; the page: {shown}; its calls: {calls}"
        ) from None


def page_url(origin: str, api_url: str, assistant: str, **extra: Any) -> str:
    query = {"apiUrl": api_url, "assistantId": assistant}
    query.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()})
    return f"{origin}/index.html?{urlencode(query)}"


async def shot(page: Any, test: str, moment: str) -> None:
    await page.screenshot(path=str(screenshot_path(test, moment)), full_page=True)


async def ai_texts(page: Any) -> list[str]:
    texts: list[str] = await page.evaluate("window.__aiTexts")
    return texts


async def message_rows(page: Any) -> list[tuple[str, str]]:
    rows: list[list[str]] = await page.eval_on_selector_all(
        "[data-testid=message]",
        "rows => rows.map(r => [r.dataset.type,"
        " r.querySelector('[data-testid=message-text]').textContent])",
    )
    return [(t, text) for t, text in rows]


async def wait_idle(page: Any, timeout: float = PAGE_WAIT) -> None:
    await page.wait_for_function(
        "document.querySelector('[data-testid=loading]')?.textContent === 'false'",
        timeout=timeout,
    )


async def send(page: Any, text: str) -> None:
    await page.fill("[data-testid=input]", text)
    await page.click("[data-testid=submit]")


async def wait_text(page: Any, selector: str, text: str, timeout: float = PAGE_WAIT) -> None:
    await page.wait_for_function(
        "([sel, text]) => [...document.querySelectorAll(sel)].some(e => e.textContent === text)",
        arg=[selector, text],
        timeout=timeout,
    )


async def approve_and_finish(page: Any, traffic: Traffic, test: str) -> dict[str, Any]:
    """Click the page's Approve on lg_hitl's interrupt; the state the page shows once the
    resumed run acted on the answer and ended."""
    await page.click("[data-testid=approve]")
    done = page.wait_for_function(
        "JSON.parse(document.querySelector('[data-testid=values]').textContent).done"
        " === \"acted on 'approved'\"",
        timeout=PAGE_WAIT,
    )
    await until(page, traffic, "the plan acted on", done)
    await until(page, traffic, "the end of the resumed run", wait_idle(page))
    await page.wait_for_selector("[data-testid=interrupt]", state="detached")
    await shot(page, test, "final")
    values: dict[str, Any] = json.loads(await page.inner_text("[data-testid=values]"))
    return values
