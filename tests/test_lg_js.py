"""The LangGraph JavaScript clients against a real ``outlast serve`` (SQLite): the SDK's
``Client`` from Node (``tests/js/client.mjs``) and the legacy ``useStream`` React hook in a
page built with Vite (``tests/js/page``), driven in the system's Chromium.

The page is served from another origin than the API, so CORS is part of the test: the hook
can only learn the run it created (and so rejoin it after a reload) when the server exposes
``Content-Location``, and it can only send ``Last-Event-ID`` when the preflight allows it.

How Node, ``npm ci``, the page build and the servers are set up is in
``tests/lg_js_support.py``. Screenshots land in ``.artifacts/console/lg-js-*``.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.browser import PAGE_WAIT, headless_page
from tests.lg_js_support import (
    AI,
    CHAT_REPLY,
    JS,
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
from tests.lg_util import seq_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def node() -> str:
    return prepare_js("page")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``outlast serve`` on SQLite with tests/langgraph.json (lg_chat, lg_hitl)."""
    with serving(tmp_path_factory.mktemp("lg_js")) as url:
        yield url


@pytest.fixture(scope="module")
def page_origin(node: str) -> Iterator[str]:
    with page_server("page") as origin:
        yield origin


# --- The SDK's Client from Node -----------------------------------------------------------


def run_client(node: str, api_url: str, timeout: float = 60) -> dict[str, Any]:
    """Runs client.mjs; what it saw, with ``error`` set when it failed."""
    done = subprocess.run(
        [node, "client.mjs", api_url, str(int(timeout * 1000))],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=timeout + 15,
        check=False,
    )
    try:
        seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        seen = {"error": f"client.mjs printed no JSON: {done.stdout}", "requests": []}
    if done.returncode != 0:
        seen.setdefault("error", f"client.mjs exited with {done.returncode}")
    seen["stderr"] = done.stderr
    return seen


def check_ok(seen: dict[str, Any], part: str) -> dict[str, Any]:
    """The scenario ``part`` of a client.mjs run, which must have finished without error."""
    error = seen.get("error") or seen.get(part, {}).get("error")
    mine = [r for r in seen["requests"] if seen.get(part, {}).get("thread_id", "-") in r["path"]]
    assert error is None, (
        f"client.mjs ({part}) failed: {error}\nwhat it saw: "
        + json.dumps(seen.get(part))[:4000]
        + "\nits requests: "
        + json.dumps(mine or seen["requests"], indent=1)[-6000:]
        + f"\nstderr: {seen['stderr'][-2000:]}"
    )
    result: dict[str, Any] = seen[part]
    return result


@pytest.fixture(scope="module")
def client_run(node: str, api: str) -> dict[str, Any]:
    """One client.mjs run, shared by the two tests that read it."""
    return run_client(node, api)


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def check_ids(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Every event carries an ``id:``, the log's seq (``<seq>.<epoch>.<n>`` for a model
    chunk sent live), and the ids strictly increase."""
    ids = [e["id"] for e in events]
    assert all(isinstance(i, str) and re.fullmatch(r"\d+(\.\d+\.\d+)?", i) for i in ids), (
        f"every event needs a seq id: line: {list(zip(names(events), ids, strict=True))}"
    )
    numbers = [seq_of(i) for i in ids]
    assert numbers == sorted(set(numbers)), f"ids must strictly increase: {numbers}"
    return numbers


def without_chunks(events: list[dict[str, Any]]) -> list[tuple[str, int, Any]]:
    """A stream's events but the model's chunks (live one by one, from the log coalesced)."""
    return [(e["event"], seq_of(e["id"])[0], e["data"]) for e in events if e["event"] != "messages"]


def check_run_stream(events: list[dict[str, Any]], run_id: str) -> None:
    assert events, "the stream carried no event"
    assert events[0]["event"] == "metadata", f"metadata must come first: {names(events)}"
    assert events[0]["data"]["run_id"] == run_id
    check_ids(events)
    assert events[-1]["event"] == "end", (
        f"the stream should close with an end event: {names(events)}"
    )


def request_to(seen: dict[str, Any], method: str, path: str) -> list[dict[str, Any]]:
    return [r for r in seen["requests"] if r["method"] == method and r["path"] == path]


def check_chat_client(seen: dict[str, Any]) -> None:
    chat = check_ok(seen, "chat")
    thread = chat["thread_id"]
    created = chat.get("run_created")
    assert created and created["thread_id"] == thread, (
        f"onRunCreated needs Content-Location /threads/{{t}}/runs/{{r}}: {created}"
    )
    run = created["run_id"]
    (post,) = request_to(seen, "POST", f"/threads/{thread}/runs/stream")
    assert post["status"] == 200 and post["content_type"].startswith("text/event-stream")
    assert post["content_location"] == f"/threads/{thread}/runs/{run}", post
    assert post["location"] == f"/threads/{thread}/runs/{run}/stream", post

    events = chat["events"]
    check_run_stream(events, run)

    # messages-tuple: [AIMessageChunk, metadata] per token, adding up to the reply
    tuples = [e["data"] for e in events if e["event"] == "messages"]
    assert len(tuples) >= 3, f"the reply should arrive in chunks: {names(events)}"
    for item in tuples:
        assert isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict), item
    chunks = [c for c, _ in tuples if c.get("type") == "AIMessageChunk"]
    assert chunks, f"no AIMessageChunk in the messages events: {tuples[:2]}"
    assert len({c["id"] for c in chunks}) == 1, "one streamed message has one id"
    assert "".join(c["content"] for c in chunks) == CHAT_REPLY

    values = [e["data"] for e in events if e["event"] == "values"]
    assert values, f"no values event: {names(events)}"
    final = values[-1]["messages"]
    assert [(m["type"], m["content"]) for m in final] == [("human", "hi"), ("ai", CHAT_REPLY)]
    assert final[-1]["id"] == chunks[0]["id"], "the chunks and the final message share an id"

    state = chat["state"]
    assert state["values"] == values[-1]
    assert state["next"] == []
    assert state["checkpoint"]["thread_id"] == thread and state["checkpoint"]["checkpoint_id"]

    (join,) = request_to(seen, "GET", f"/threads/{thread}/runs/{run}/stream")
    assert join["last_event_id"] == "-1" and join["status"] == 200, join
    joined = chat["joined"]
    replayed = "".join(
        c["content"] for c, _ in (e["data"] for e in joined if e["event"] == "messages")
    )
    assert without_chunks(joined) == without_chunks(events) and replayed == CHAT_REPLY, (
        "joinStream with Last-Event-ID -1 must replay the run exactly:\n"
        f"live:   {list(zip(names(events), [e['id'] for e in events], strict=True))}\n"
        f"joined: {list(zip(names(joined), [e['id'] for e in joined], strict=True))}"
    )


def check_hitl_client(seen: dict[str, Any]) -> None:
    hitl = check_ok(seen, "hitl")
    thread = hitl["thread_id"]
    assert hitl["first"].get("run_created"), "onRunCreated needs Content-Location"
    first_run = hitl["first"]["run_created"]["run_id"]
    first = hitl["first"]["events"]
    check_run_stream(first, first_run)

    paused = [e["data"] for e in first if e["event"] == "values" and "__interrupt__" in e["data"]]
    assert len(paused) == 1, f"one values event carries the interrupt: {first}"
    assert paused[0]["plan"] == "plan for x"
    (interrupt,) = paused[0]["__interrupt__"]
    assert interrupt["value"] == PLAN_QUESTION and interrupt["id"], interrupt
    updates = [e["data"] for e in first if e["event"] == "updates"]
    assert {"think": {"plan": "plan for x"}} in updates, updates
    assert [i["id"] for u in updates for i in u.get("__interrupt__", [])] == [interrupt["id"]]

    assert hitl["thread_at_interrupt"]["status"] == "interrupted", hitl["thread_at_interrupt"]
    state = hitl["state_at_interrupt"]
    assert state["next"] == ["ask"], state
    assert [i["value"] for t in state["tasks"] for i in t["interrupts"]] == [PLAN_QUESTION]
    assert [i["id"] for i in state["interrupts"]] == [interrupt["id"]]

    assert hitl["resume"].get("run_created"), "onRunCreated needs Content-Location"
    resume_run = hitl["resume"]["run_created"]["run_id"]
    assert resume_run != first_run, "a resume is a new run"
    resumed = hitl["resume"]["events"]
    check_run_stream(resumed, resume_run)
    (post,) = [
        r
        for r in request_to(seen, "POST", f"/threads/{thread}/runs/stream")
        if r["body"].get("command")
    ]
    assert post["body"]["command"] == {"resume": "yes"} and post["status"] == 200
    final = [e["data"] for e in resumed if e["event"] == "values"][-1]
    assert final == {"topic": "x", "plan": "plan for x", "answer": "yes", "done": "acted on 'yes'"}

    history = hitl["history"]
    assert history[0]["values"] == final and history[0]["next"] == []
    assert any(h["next"] == ["ask"] for h in history), [h["next"] for h in history]
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    assert len(ids) == len(set(ids)), "history lists each checkpoint once"
    assert hitl["thread_after"]["status"] == "idle", hitl["thread_after"]


def test_js_client_streams_and_replays_a_chat_run(client_run: dict[str, Any]) -> None:
    check_chat_client(client_run)


def test_js_client_interrupts_and_resumes(client_run: dict[str, Any]) -> None:
    check_hitl_client(client_run)


# --- useStream in Chromium ----------------------------------------------------------------


@pytest.fixture
async def browser_page(page_origin: str) -> AsyncIterator[Any]:
    async with headless_page(1000, 800) as page:
        yield page


async def check_chat_page(page: Any, origin: str, api_url: str) -> None:
    traffic = Traffic(api_url)
    page.on("request", traffic.record)
    # a chunk every 150 ms (more than a server's token-coalescing interval), so tokens
    # reach the page in several renders
    await page.goto(page_url(origin, api_url, "lg_chat", configurable={"delay": 0.15}))
    await page.wait_for_selector("[data-testid=status]")
    await send(page, "hi")
    ai = AI
    await until(page, traffic, "the AI message", page.wait_for_selector(ai, timeout=PAGE_WAIT))
    await shot(page, "lg-js-chat", "streaming")
    await until(page, traffic, "the whole reply", wait_text(page, ai, CHAT_REPLY))
    await until(page, traffic, "the end of the run", wait_idle(page))
    await shot(page, "lg-js-chat", "final")

    assert await message_rows(page) == [("human", "hi"), ("ai", CHAT_REPLY)]
    texts = await ai_texts(page)
    assert texts[-1] == CHAT_REPLY
    assert all(CHAT_REPLY.startswith(t) for t in texts), f"tokens out of order: {texts}"
    assert len(texts) >= 3, f"the reply should appear token by token, not at once: {texts}"

    posts = [r for r in traffic.requests if r.method == "POST" and r.url.endswith("/runs/stream")]
    assert len(posts) == 1, [r.url for r in traffic.requests]
    response = await posts[0].response()
    headers = await response.all_headers()
    exposed = {
        h.strip().lower() for h in headers.get("access-control-expose-headers", "").split(",")
    }
    # Content-Location tells the hook its run id; Location is where the SDK reconnects
    assert {"location", "content-location"} <= exposed, headers
    assert headers.get("access-control-allow-origin") in ("*", origin), headers
    created: list[dict[str, str]] = await page.evaluate("window.__created")
    assert len(created) == 1, f"onCreated needs Content-Location exposed over CORS: {created}"


async def check_hitl_page(page: Any, origin: str, api_url: str) -> None:
    traffic = Traffic(api_url)
    page.on("request", traffic.record)
    await page.goto(page_url(origin, api_url, "lg_hitl", field="topic"))
    await page.wait_for_selector("[data-testid=status]")
    await send(page, "x")
    await until(
        page,
        traffic,
        "the interrupt",
        page.wait_for_selector("[data-testid=interrupt]", timeout=PAGE_WAIT),
    )
    await until(page, traffic, "the end of the first run", wait_idle(page))
    shown = json.loads(await page.inner_text("[data-testid=interrupt-value]"))
    assert shown == PLAN_QUESTION
    assert "interrupted" in await page.inner_text("[data-testid=status]")
    await shot(page, "lg-js-hitl", "interrupt")

    values = await approve_and_finish(page, traffic, "lg-js-hitl")
    assert values == {
        "topic": "x",
        "plan": "plan for x",
        "answer": "approved",
        "done": "acted on 'approved'",
    }

    calls = await traffic.calls()
    runs = [c for c in calls if c["method"] == "POST" and c["path"].endswith("/runs/stream")]
    assert [r["body"].get("command") for r in runs] == [None, {"resume": "approved"}], runs
    assert runs[0]["body"]["input"] == {"topic": "x"}


async def check_rejoin_page(page: Any, origin: str, api_url: str) -> None:
    words = 14
    expected = " ".join(["echo(slow)"] + [f"w{i}" for i in range(words)])
    traffic = Traffic(api_url)
    page.on("request", traffic.record)
    # 29 chunks, 0.25 s apart: about 7 s of streaming, so the reload lands mid-run even on a
    # busy machine
    slow = {"delay": 0.25, "words": words}
    await page.goto(page_url(origin, api_url, "lg_chat", configurable=slow))
    await page.wait_for_selector("[data-testid=status]")
    await send(page, "slow")
    mid_run = page.wait_for_function(
        "(window.__aiTexts.at(-1) || '').includes(' w2')", timeout=PAGE_WAIT
    )
    await until(page, traffic, "the first words", mid_run)
    created: list[dict[str, str]] = await page.evaluate("window.__created")
    assert len(created) == 1, f"onCreated needs Content-Location exposed over CORS: {created}"
    thread, run = created[0]["thread_id"], created[0]["run_id"]
    stored = await page.evaluate(f"sessionStorage.getItem('lg:stream:{thread}')")
    assert stored == run, "reconnectOnMount remembers the run in sessionStorage"
    before = (await ai_texts(page))[-1]
    assert before != expected and expected.startswith(before), before
    await shot(page, "lg-js-rejoin", "before-reload")

    mark = len(traffic.requests)
    await page.reload()
    assert f"threadId={thread}" in page.url
    ai = AI
    await until(page, traffic, "the whole reply after the reload", wait_text(page, ai, expected))
    await until(page, traffic, "the end of the rejoined run", wait_idle(page))
    await shot(page, "lg-js-rejoin", "after-reload")

    after = await ai_texts(page)  # the page's window is new: only post-reload renders
    assert after[-1] == expected
    assert all(expected.startswith(t) for t in after), f"a word repeated or out of order: {after}"
    assert any(t != expected for t in after), f"the page rejoined a finished run: {after}"
    assert await message_rows(page) == [("human", "slow"), ("ai", expected)]
    assert (await page.inner_text(ai)).split() == expected.split()

    calls = await traffic.calls(mark)
    joins = [
        c
        for c in calls
        if c["method"] == "GET" and c["path"] == f"/threads/{thread}/runs/{run}/stream"
    ]
    assert joins, f"no rejoin after the reload: {[(c['method'], c['path']) for c in calls]}"
    assert joins[0]["last_event_id"] == "-1", joins[0]
    assert not [c for c in calls if c["method"] == "POST" and c["path"].endswith("/runs/stream")]
    gone = await page.evaluate(f"sessionStorage.getItem('lg:stream:{thread}')")
    assert gone is None, "the finished run is forgotten"


async def test_use_stream_page_streams_tokens(
    browser_page: Any, page_origin: str, api: str
) -> None:
    await check_chat_page(browser_page, page_origin, api)


async def test_use_stream_page_answers_an_interrupt(
    browser_page: Any, page_origin: str, api: str
) -> None:
    await check_hitl_page(browser_page, page_origin, api)


async def test_use_stream_page_rejoins_a_run_after_a_reload(
    browser_page: Any, page_origin: str, api: str
) -> None:
    await check_rejoin_page(browser_page, page_origin, api)
