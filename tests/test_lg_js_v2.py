"""The newest ``useStream`` React hook (``@langchain/react``), which speaks LangGraph's
thread protocol v2 (``POST /threads/{t}/commands``, ``POST /threads/{t}/stream/events``),
against a real ``outlast serve`` (SQLite), in a page built with Vite (``tests/js/page-v2``)
and driven in the system's Chromium, from another origin than the API (CORS is part of it).

Each test reads what the real hook rendered (``window.__aiTexts``: every distinct text of
the last AI message) and what it asked the server: tokens arrive one by one; an interrupt is
shown and answered with ``input.respond``; a reload mid-run rejoins the run's stream; a
SIGKILL of the whole server mid-run, and a restart on the same database and port, ends with
the whole reply, no word lost or repeated. Set-up is in ``tests/lg_js_support.py``;
screenshots land in ``.artifacts/console/lg-js-v2-*``.
"""

from __future__ import annotations

import itertools
import json
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import PAGE_WAIT, headless_page
from tests.lg_js_support import (
    AI,
    CHAT_REPLY,
    PLAN_QUESTION,
    Traffic,
    ai_texts,
    approve_and_finish,
    message_rows,
    page_server,
    page_url,
    prepare_js,
    send,
    serving,
    shot,
    until,
    wait_idle,
    wait_text,
)
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

PAGE = "page-v2"


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    prepare_js(PAGE)
    with page_server(PAGE) as origin:
        yield origin


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``outlast serve`` on SQLite with tests/langgraph.json (lg_chat, lg_hitl)."""
    with serving(tmp_path_factory.mktemp("lg_js_v2")) as url:
        yield url


@pytest.fixture
async def page(page_origin: str) -> AsyncIterator[Any]:
    async with headless_page(1000, 800) as opened:
        yield opened


def commands(calls: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """The bodies of the protocol commands ``method`` the page sent."""
    return [
        c["body"]
        for c in calls
        if c["method"] == "POST"
        and c["path"].endswith("/commands")
        and (c["body"] or {}).get("method") == method
    ]


def check_v2_only(calls: list[dict[str, Any]], thread: str) -> None:
    """The hook spoke the thread protocol v2 only, on the page's thread."""
    paths = {(c["method"], c["path"]) for c in calls}
    assert ("POST", f"/threads/{thread}/stream/events") in paths, paths
    legacy = [p for p in paths if "/runs" in p[1]]
    assert not legacy, f"the v2 hook used the legacy run endpoints: {legacy}"


async def texts_by_message(page: Any) -> dict[str, list[str]]:
    """Every distinct text each AI message showed, by message id, in order."""
    texts: dict[str, list[str]] = await page.evaluate("window.__textsById")
    return texts


def check_growth(by_id: dict[str, list[str]]) -> None:
    """Each AI message only ever grew, each text extending the one before: a word delivered
    twice (a replay the hook could not recognise) or lost would break the chain."""
    for message, texts in by_id.items():
        for before, after in itertools.pairwise(texts):
            assert after.startswith(before) and after != before, (
                f"message {message} went from {before!r} to {after!r}: {texts}"
            )


def check_one_reply(texts: list[str], expected: str) -> None:
    """Every text shown was a prefix of the reply (no word repeated or out of order) and it
    ended with the whole reply."""
    assert texts and texts[-1] == expected, texts
    assert all(expected.startswith(t) for t in texts), f"a word repeated or out of order: {texts}"


async def open_chat(page: Any, origin: str, api_url: str, **configurable: Any) -> Traffic:
    traffic = Traffic(api_url)
    page.on("request", traffic.record)
    await page.goto(page_url(origin, api_url, "lg_chat", configurable=configurable))
    await page.wait_for_selector("[data-testid=status]")
    return traffic


async def thread_of(page: Any) -> str:
    """The thread the hook named (the page keeps it in its URL)."""
    url: str = page.url
    threads = parse_qs(urlsplit(url).query).get("threadId") or [""]
    assert threads[0], f"the hook named no thread: {page.url}"
    return threads[0]


async def test_use_stream_v2_streams_tokens(page: Any, page_origin: str, api: str) -> None:
    # a chunk every 150 ms (more than a server's token-coalescing interval), so tokens
    # reach the page in several renders
    traffic = await open_chat(page, page_origin, api, delay=0.15)
    await send(page, "hi")
    await until(page, traffic, "the AI message", page.wait_for_selector(AI, timeout=PAGE_WAIT))
    await shot(page, "lg-js-v2-chat", "streaming")
    await until(page, traffic, "the whole reply", wait_text(page, AI, CHAT_REPLY))
    await until(page, traffic, "the end of the run", wait_idle(page))
    await shot(page, "lg-js-v2-chat", "final")

    assert await message_rows(page) == [("human", "hi"), ("ai", CHAT_REPLY)]
    texts = await ai_texts(page)
    check_one_reply(texts, CHAT_REPLY)
    check_growth(await texts_by_message(page))
    assert len(texts) >= 3, f"the reply should appear token by token, not at once: {texts}"

    thread = await thread_of(page)
    calls = await traffic.calls()
    check_v2_only(calls, thread)
    (start,) = commands(calls, "run.start")
    assert start["params"]["assistant_id"] == "lg_chat", start
    assert start["params"]["input"]["messages"][0]["content"] == "hi", start
    created: list[dict[str, str]] = await page.evaluate("window.__created")
    assert len(created) == 1 and created[0]["runId"], created


async def test_use_stream_v2_answers_an_interrupt(page: Any, page_origin: str, api: str) -> None:
    traffic = Traffic(api)
    page.on("request", traffic.record)
    await page.goto(page_url(page_origin, api, "lg_hitl", field="topic"))
    await page.wait_for_selector("[data-testid=status]")
    await send(page, "x")
    shown = page.wait_for_selector("[data-testid=interrupt]", timeout=PAGE_WAIT)
    await until(page, traffic, "the interrupt", shown)
    await until(page, traffic, "the end of the first run", wait_idle(page))
    assert json.loads(await page.inner_text("[data-testid=interrupt-value]")) == PLAN_QUESTION
    assert "interrupted" in await page.inner_text("[data-testid=status]")
    await shot(page, "lg-js-v2-hitl", "interrupt")

    values = await approve_and_finish(page, traffic, "lg-js-v2-hitl")
    # the hook's values carry its messages projection, under messagesKey
    assert values.pop("messages") == [], values
    assert values == {
        "topic": "x",
        "plan": "plan for x",
        "answer": "approved",
        "done": "acted on 'approved'",
    }

    calls = await traffic.calls()
    check_v2_only(calls, await thread_of(page))
    (start,) = commands(calls, "run.start")
    assert start["params"]["input"] == {"topic": "x"}, start
    (respond,) = commands(calls, "input.respond")
    assert respond["params"]["response"] == "approved", respond
    assert respond["params"]["interrupt_id"], respond


SLOW_WORDS = 14
# 29 chunks, 0.25 s apart: about 7 s of streaming, so a reload or a kill lands mid-run even
# on a busy machine
SLOW = {"delay": 0.25, "words": SLOW_WORDS}
SLOW_REPLY = " ".join(["echo(slow)"] + [f"w{i}" for i in range(SLOW_WORDS)])


async def send_slow(page: Any, traffic: Traffic) -> str:
    """Sends "slow" and waits for the first words; the thread's id."""
    await send(page, "slow")
    mid_run = page.wait_for_function(
        "(window.__aiTexts.at(-1) || '').includes(' w2')", timeout=PAGE_WAIT
    )
    await until(page, traffic, "the first words", mid_run)
    before = (await ai_texts(page))[-1]
    assert before != SLOW_REPLY and SLOW_REPLY.startswith(before), before
    return await thread_of(page)


async def wait_slow_reply(page: Any, traffic: Traffic, what: str) -> None:
    await until(page, traffic, f"the whole reply {what}", wait_text(page, AI, SLOW_REPLY))
    await until(page, traffic, f"the end of the run {what}", wait_idle(page))


async def check_slow_reply(page: Any, traffic: Traffic, what: str) -> list[str]:
    """The page ends with the whole slow reply, once; the texts it showed."""
    await wait_slow_reply(page, traffic, what)
    texts = await ai_texts(page)
    rows = await message_rows(page)
    assert rows == [("human", "slow"), ("ai", SLOW_REPLY)], f"{rows}; texts shown: {texts}"
    check_one_reply(texts, SLOW_REPLY)
    check_growth(await texts_by_message(page))
    assert (await page.inner_text(AI)).split() == SLOW_REPLY.split()
    return texts


async def test_use_stream_v2_rejoins_a_run_after_a_reload(
    page: Any, page_origin: str, api: str
) -> None:
    traffic = await open_chat(page, page_origin, api, **SLOW)
    thread = await send_slow(page, traffic)
    await shot(page, "lg-js-v2-rejoin", "before-reload")

    mark = len(traffic.requests)
    await page.reload()
    assert f"threadId={thread}" in page.url
    after = await check_slow_reply(page, traffic, "after the reload")
    await shot(page, "lg-js-v2-rejoin", "after-reload")
    # the page's window is new: only post-reload renders, which must have streamed
    assert any(t != SLOW_REPLY for t in after), f"the page rejoined a finished run: {after}"

    calls = await traffic.calls(mark)
    check_v2_only(calls, thread)
    assert not commands(calls, "run.start"), "a reload must rejoin the run, not start one"


async def test_use_stream_v2_survives_a_sigkill_of_the_server(
    page: Any, page_origin: str, tmp_path: Path
) -> None:
    """The whole server is SIGKILLed mid-reply and started again on the same database and
    port: the restarted server takes the run over (its model node runs again from the last
    checkpoint), the hook reconnects by itself, and the page shows the whole reply once.

    The lost attempt's partial reply stays on the page until the thread is loaded again: the
    retried model call streams a message with a new id (LangChain's id of the call), the
    server ends the lost one with the protocol's message ``error``, and the hook keeps a
    streamed message no ``values`` snapshot ever held (docs/faces/langgraph.md). A reload
    then shows the thread as it is stored: the whole reply, once."""
    db_url = f"sqlite:///{tmp_path / 'outlast.db'}"
    server, api = start_server(db_url, tmp_path / "s1.log")
    restarted = None
    try:
        traffic = await open_chat(page, page_origin, api, **SLOW)
        thread = await send_slow(page, traffic)
        await shot(page, "lg-js-v2-sigkill", "before-kill")
        mark = len(traffic.requests)
        kill(server, signal.SIGKILL)
        restarted, _ = start_server(db_url, tmp_path / "s2.log", port=urlsplit(api).port or 0)
        await wait_slow_reply(page, traffic, "after the restart")
        await shot(page, "lg-js-v2-sigkill", "after-restart")

        texts = await ai_texts(page)
        assert all(SLOW_REPLY.startswith(t) for t in texts), f"a word repeated: {texts}"
        by_id = await texts_by_message(page)
        check_growth(by_id)
        streamed = [t for t in by_id.values() if t[-1] == SLOW_REPLY]
        assert len(streamed) == 1 and len(streamed[0]) > 3, f"the retried reply streams: {by_id}"
        rows = await message_rows(page)
        assert rows[0] == ("human", "slow"), rows
        whole = [text for kind, text in rows if kind == "ai" and text == SLOW_REPLY]
        assert len(whole) == 1, f"the whole reply must show exactly once: {rows}"
        lost = [text for kind, text in rows[1:] if text != SLOW_REPLY]
        assert len(lost) <= 1 and all(SLOW_REPLY.startswith(t) for t in lost), rows
        reconnects: list[dict[str, int]] = await page.evaluate("window.__reconnects")
        assert reconnects, "the hook should have reconnected to the restarted server"
        calls = await traffic.calls(mark)
        check_v2_only(calls, thread)
        assert not commands(calls, "run.start"), "the run must go on, not start again"

        await page.reload()
        ai = page.wait_for_selector(AI, timeout=PAGE_WAIT)
        await until(page, traffic, "the thread loaded again", ai)
        assert await message_rows(page) == [("human", "slow"), ("ai", SLOW_REPLY)]
    finally:
        kill(server, signal.SIGKILL)
        if restarted is not None:
            kill(restarted, signal.SIGTERM)
