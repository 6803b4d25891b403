"""The web console in a real browser: a run followed, a cut connection, an answer, a cancel,
a gap. Screenshots of each moment land in ``.artifacts/console/``."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from outlast.store import Store
from outlast.store.records import Event, EventDraft, Lease
from outlast.vocabulary import EventType
from tests.browser import PAGE_WAIT, CutProxy, headless_page, screenshot_path
from tests.harness import (
    Server,
    eventually,
    make_settings,
    post_run,
    serve,
    until_snapshot,
    wait_result,
)

pytestmark = pytest.mark.slow

STEPS = {"messages": [{"role": "user", "content": "watch me"}]}


@pytest.fixture
def backend() -> str:
    """The console is the same on both backends; the embedded default is what a person
    opens first."""
    return "sqlite"


@pytest.fixture
async def page(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    async with headless_page(1280, 900) as page:
        yield page


@contextlib.asynccontextmanager
async def console(store: Store, **settings: Any) -> AsyncIterator[tuple[Server, CutProxy]]:
    async with serve(store, make_settings(**settings)) as srv:
        proxy = CutProxy(int(srv.url.rsplit(":", 1)[1]))
        await proxy.start()
        try:
            yield srv, proxy
        finally:
            await proxy.close()


async def shot(page: Any, test: str, moment: str) -> None:
    await page.screenshot(path=str(screenshot_path(test, moment)), full_page=True)


async def timeline_seqs(page: Any) -> list[int]:
    """Every seq the timeline shows (model output rows stand for several deltas)."""
    found: list[str] = await page.eval_on_selector_all(
        "#timeline .ev", "rows => rows.map(r => r.dataset.seqs || r.dataset.seq)"
    )
    return [int(s) for item in found for s in item.split(",")]


async def conn_state(page: Any) -> str:
    state: str = await page.get_attribute("#conn", "data-state")
    return state


async def test_a_run_followed_to_completion(store: Store, page: Any) -> None:
    async with console(store) as (srv, proxy):
        run = await post_run(
            srv.client, graph="steps", input=STEPS, config={"configurable": {"step_delay": 0.3}}
        )
        await page.goto(f"http://127.0.0.1:{proxy.port}/")
        row = page.locator(f"tr[data-run='{run['id']}']")
        await row.wait_for()
        await shot(page, "followed", "list")
        await row.locator("a").click()
        await page.wait_for_selector("#conn[data-state='ended']", timeout=PAGE_WAIT)
        await page.wait_for_selector("#status.completed")
        await shot(page, "followed", "completed")
        final = await wait_result(srv.client, run["id"])
        assert await timeline_seqs(page) == list(range(1, final["last_seq"] + 1))
        nodes = await page.locator("#timeline .group .node").all_inner_texts()
        # one group per node.updated in the log: a node that ran again (a starved machine
        # can cost a run its lease or its store's write, and it resumes from its last
        # checkpoint) is shown again, after the seam, as the log holds it
        logged = await store.read_events(run["id"], 0, 10_000)
        ran = [f"node {e.data['node']}" for e in logged if e.type == "node.updated"]
        assert [n for n in nodes if n != "run"] == ran
        assert list(dict.fromkeys(ran))[:5] == [
            f"node {name}" for name in ("plan", "gather", "draft", "review", "finish")
        ]
        if len(ran) > len(set(ran)):
            assert any(e.type == EventType.RUN_RESUMED for e in logged), ran
        assert "Worked on 'watch me'" in await page.inner_text("#result")
        assert re.search(r"checkpoints\s*\d+", await page.inner_text("#preserved-body"))


async def test_a_late_activity_report_does_not_rename_the_next_node(
    store: Store, page: Any, tmp_path: Path
) -> None:
    """On a starved machine the lease renewer's activity report for a node can be written
    after that node's node.updated; the group it falls in still belongs to the node that
    finishes there."""
    gate = tmp_path / "gate"
    conf = {"count_file": str(tmp_path / "count"), "gate_at": "n2", "gate": str(gate)}
    async with console(store) as (srv, proxy):
        run = await post_run(srv.client, graph="counted", input={}, config={"configurable": conf})
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/runs/{run['id']}")

        async def n1_updated() -> list[Event]:
            logged = await store.read_events(run["id"], 0, 10_000)
            return [e for e in logged if e.type == "node.updated" and e.data["node"] == "n1"]

        await eventually(n1_updated, what="n1's node.updated")
        held = await store.get_run(run["id"])
        assert held is not None and held.worker_id is not None
        late = {"kind": "node", "name": "n1", "started_at": held.created_at.isoformat()}
        lease = Lease(run["id"], held.worker_id, held.lease_epoch)
        await store.append(lease, [EventDraft(EventType.ACTIVITY, late)])
        gate.write_text("open")
        await page.wait_for_selector("#conn[data-state='ended']", timeout=PAGE_WAIT)
        nodes = await page.locator("#timeline .group .node").all_inner_texts()
        assert [n for n in nodes if n != "run"] == [f"node n{i}" for i in range(1, 7)]


async def test_a_cut_connection_reconnects_and_resumes_without_repeats(
    store: Store, page: Any
) -> None:
    async with console(store) as (srv, proxy):
        run = await post_run(
            srv.client, graph="steps", input=STEPS, config={"configurable": {"step_delay": 1.5}}
        )
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/runs/{run['id']}")
        await page.wait_for_selector("#timeline .ev[data-type='node.updated']")
        assert await conn_state(page) == "live"
        await proxy.cut()
        await page.wait_for_selector("#conn[data-state='reconnecting']", timeout=PAGE_WAIT)
        assert "next try in" in await page.inner_text("#conn-text")
        await shot(page, "cut", "reconnecting")
        seen = max(await timeline_seqs(page))
        await until_snapshot(  # the run goes on while the page is cut off
            srv.client, run["id"], lambda s: s["last_seq"] > seen, what="events the page missed"
        )
        await proxy.restore()
        await page.wait_for_selector("#conn[data-state='resumed']", timeout=PAGE_WAIT)
        await page.wait_for_function(
            "document.querySelector('#conn-text').textContent.includes('caught up')"
        )
        await shot(page, "cut", "resumed")
        await page.wait_for_selector("#conn[data-state='ended']", timeout=PAGE_WAIT)
        final = await wait_result(srv.client, run["id"])
        assert await timeline_seqs(page) == list(range(1, final["last_seq"] + 1))
        assert await page.locator("#timeline [data-type='resumed']").count() == 1
        await shot(page, "cut", "ended")


async def test_a_human_wait_is_answered_through_the_form(
    store: Store, page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    folders = {"outbox": str(tmp_path / "outbox"), "reports": str(tmp_path / "reports")}
    async with console(store) as (srv, proxy):
        run = await post_run(
            srv.client,
            graph="agent",
            input={"messages": [{"role": "user", "content": "Search the notes, ask who gets it"}]},
            config={"configurable": folders},
            budget={"tool_calls": {"soft": 5, "hard": 10}},
        )
        # The list shows what a waiting run waits on, and for how long; it updates by itself.
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/?status=waiting")
        row = page.locator(f"tr[data-run='{run['id']}']")
        await row.wait_for(timeout=PAGE_WAIT)
        cells = await row.locator("td").all_inner_texts()
        assert cells[1] == "waiting" and cells[5] == "budget" and cells[6].endswith(" s")
        assert await page.locator("#filters button.active").inner_text() == "waiting"
        await shot(page, "answer", "list-waiting")
        await row.locator("a").click()
        form = page.locator("#answer-form")
        # first the budget checkpoint (5 tool calls: search + 3 reads + the question)
        await form.wait_for(state="visible", timeout=PAGE_WAIT)
        assert "budget" in await page.inner_text("#wait-body")
        await form.locator("select[name='action']").select_option(label='"continue"')
        await form.locator("input[name='tranche']").fill("2")
        await shot(page, "answer", "budget-form")
        await form.locator("button[type='submit']").click()
        # then the question, with a text field from the wait's schema
        await page.wait_for_function(
            "document.querySelector('#wait-body').textContent.includes('human')", timeout=PAGE_WAIT
        )
        assert "Who should receive the report?" in await page.inner_text("#wait-body")
        await form.locator("[name='answer']").fill("")
        await form.locator("button[type='submit']").click()
        error = page.locator("#action-error")
        await error.wait_for(state="visible")
        assert "should be non-empty" in await error.inner_text()  # the API's words, as written
        await shot(page, "answer", "refused")
        await form.locator("[name='answer']").fill("bo@example.com")
        await shot(page, "answer", "human-form")
        await form.locator("button[type='submit']").click()
        await page.wait_for_selector("#status.completed", timeout=PAGE_WAIT)
        await shot(page, "answer", "completed")
        final = await wait_result(srv.client, run["id"])
    tools = [m for m in final["result"]["messages"] if m["type"] == "tool"]
    assert tools[-1]["content"] == "bo@example.com"


async def test_cancel_asks_first_and_says_closing_is_not_cancelling(
    store: Store, page: Any
) -> None:
    async with console(store) as (srv, proxy):
        run = await post_run(
            srv.client, graph="steps", input=STEPS, config={"configurable": {"step_delay": 2}}
        )
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/runs/{run['id']}")
        await page.wait_for_selector("#status.running")
        prompts: list[str] = []

        async def decline_then_accept(dialog: Any) -> None:
            prompts.append(dialog.message)
            await (dialog.dismiss() if len(prompts) == 1 else dialog.accept())

        page.on("dialog", decline_then_accept)
        await page.click("#cancel")  # declined: nothing happens
        await page.wait_for_timeout(300)
        assert (await srv.client.get(f"/v1/runs/{run['id']}")).json()["status"] == "running"
        await page.click("#cancel")
        await page.wait_for_selector("#status.cancelled", timeout=PAGE_WAIT)
        await page.wait_for_selector("#timeline .ev[data-type='run.cancelled']")
        await shot(page, "cancel", "cancelled")
        assert "Closing this page does NOT cancel" in prompts[0]
        assert await page.is_disabled("#cancel")


async def test_a_gap_is_shown_as_a_gap_with_a_fresh_snapshot(store: Store, page: Any) -> None:
    async with console(store) as (srv, proxy):
        run = await post_run(
            srv.client, graph="steps", input=STEPS, config={"configurable": {"step_delay": 0.8}}
        )
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/runs/{run['id']}")
        await page.wait_for_selector("#timeline .ev[data-type='node.updated']")
        await proxy.cut()
        seen = max(await timeline_seqs(page))
        snap = await until_snapshot(
            srv.client, run["id"], lambda s: s["last_seq"] >= seen + 3, what="3 events missed"
        )
        pruned = snap["last_seq"] - 1
        await store.prune_events(run["id"], pruned)  # retention took what the page missed
        await proxy.restore()
        gap = page.locator("#timeline .gap")
        await gap.wait_for(timeout=PAGE_WAIT)
        assert f"#{seen + 1}–#{pruned} were pruned" in await gap.inner_text()
        await page.wait_for_selector("#timeline [data-type='snapshot']")
        await shot(page, "gap", "gap")
        await page.wait_for_selector("#conn[data-state='ended']", timeout=PAGE_WAIT)
        final = await wait_result(srv.client, run["id"])
        shown = await timeline_seqs(page)
        assert shown == [*range(1, seen + 1), *range(pruned + 1, final["last_seq"] + 1)]
        await shot(page, "gap", "ended")


async def test_a_credential_is_typed_into_a_password_field(store: Store, page: Any) -> None:
    secret = "console-typed-secret"
    async with console(store) as (srv, proxy):
        run = await post_run(srv.client, graph="asks_auth")
        await page.goto(f"http://127.0.0.1:{proxy.port}/#/runs/{run['id']}")
        form = page.locator("#answer-form")
        await form.wait_for(state="visible", timeout=PAGE_WAIT)
        field = form.locator("[name='answer']")
        assert await field.get_attribute("type") == "password"
        assert await field.get_attribute("autocomplete") == "off"
        await field.fill(secret)
        await form.locator("button[type='submit']").click()
        await page.wait_for_selector("#status.completed", timeout=PAGE_WAIT)
        assert secret not in await page.content()  # wait.ended shows it redacted
        final = await wait_result(srv.client, run["id"])
        from tests.credential_graphs import digest

        assert final["result"]["got"] == digest(secret)


async def test_the_console_works_with_api_keys(store: Store, page: Any) -> None:
    key = "console-key-0123456789"
    async with console(store, api_keys=f"ops:{key}") as (srv, proxy):
        headers = {"Authorization": f"Bearer {key}"}
        run = (
            await srv.client.post(
                "/v1/runs", json={"graph": "steps", "input": STEPS}, headers=headers
            )
        ).json()
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))
        await page.goto(f"http://127.0.0.1:{proxy.port}/")
        await page.wait_for_function(
            "document.querySelector('#conn-text').textContent.includes('needs an API key')"
        )
        await shot(page, "keys", "asks-for-key")
        await page.fill("#api-key", key)
        await page.press("#api-key", "Enter")
        await page.dispatch_event("#api-key", "change")
        await page.locator(f"tr[data-run='{run['id']}'] a").click()
        await page.wait_for_selector("#conn[data-state='ended']", timeout=PAGE_WAIT)
        final = (await srv.client.get(f"/v1/runs/{run['id']}", headers=headers)).json()
        assert await timeline_seqs(page) == list(range(1, final["last_seq"] + 1))
        await shot(page, "keys", "followed")
        # the stream opened with a token minted for it; the key itself was in no URL
        streams = [u for u in urls if f"/v1/runs/{run['id']}/events" in u]
        assert streams and all("stream_token=st1." in u for u in streams), streams
        assert not any(key in u for u in urls)
