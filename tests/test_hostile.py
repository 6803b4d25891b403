"""Hostile input (issue 8): the API fuzzed from its own OpenAPI document, and the parsers
and validators at its edge checked as properties.

The fuzzing runs schemathesis against a real server on loopback, valid and invalid
requests by the document, with the ids of real runs, waits, threads and signal keys (and a
few reused ``Idempotency-Key`` values) mixed into what it generates, so answers, signals,
cancels, thread runs and idempotent replays reach the store instead of stopping at a
``404``. For every request:

* no response is a 5xx;
* every 4xx is ``application/problem+json`` with a ``title`` and a ``detail``;
* a request refused with a 4xx leaves the database as it was: no new run, event, wait,
  signal or effect row, and no run or wait changed.

It runs on SQLite (the API layer is under test; the store contract suite covers both
backends) with no worker in the server, so nothing but the fuzzed requests writes. The
hypothesis loops are synchronous, so they run in a worker thread while the server runs in
the test's event loop; the database is read with plain ``sqlite3`` between requests.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import negative_data_rejection

from outlast.api.sse import parse_cursor
from outlast.errors import InvalidAnswer, InvalidCursor
from outlast.runtime.accept import RunRequest, fingerprint, new_run
from outlast.service.answers import check_against
from outlast.store import Store
from tests.harness import make_settings, post_run, serve, wait_result

# Examples per operation: valid ones by the document, then invalid ones. Generating them is
# most of the time this takes (schemathesis builds each body through JSON Schema).
EXAMPLES = {GenerationMode.POSITIVE: 20, GenerationMode.NEGATIVE: 10}
HOSTILE_EXAMPLES = 250
FUZZ = settings(
    max_examples=EXAMPLES[GenerationMode.POSITIVE],
    deadline=None,
    database=None,
    # The failures are collected and reported together (see ``Fuzzer``); shrinking against
    # a server whose state moves on with every request would not reproduce anyway.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
# The pure properties are cheap, but their JSON strategies are not: fewer, richer examples.
PROPERTIES = settings(max_examples=50, deadline=None)
TABLES = (
    "outlast_runs",
    "outlast_events",
    "outlast_waits",
    "outlast_signals",
    "outlast_effects",
    "outlast_threads",
    "outlast_lg_runs",
    "outlast_assistants",
    "outlast_assistant_versions",
)
IDEMPOTENCY_KEYS = ("hostile-1", "hostile-2")
often = st.sampled_from([True, True, True, False])
GRAPHS = ("steps", "asks", "human_typed", "eventual", "boom")
FAR = "2999-01-01T00:00:00+00:00"


@pytest.fixture
def backend() -> str:
    return "sqlite"


# -- the fuzzing ------------------------------------------------------------------------


@dataclass
class Known:
    """Real things for the fuzzer to aim at."""

    runs: list[str] = field(default_factory=list)
    waits: list[tuple[str, str]] = field(default_factory=list)  # (run id, wait id)
    threads: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


async def _waiting(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    for _ in range(1000):
        snap: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
        if snap["status"] == "waiting":
            return snap
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never waited: {snap}")


async def _seed(store: Store) -> Known:
    """Runs in the states the API tells apart, made by a real worker: completed (with
    checkpoints, for the thread routes), failed, and waiting on a human (with and without a
    schema, two at once), an authorisation, an event and a timer."""
    known = Known(keys=["hostile.go", "hostile.other"])
    async with serve(store) as srv:
        done = await post_run(srv.client, graph="steps", thread_id="hostile-done")
        failed = await post_run(srv.client, graph="boom")
        waiting = [
            await post_run(srv.client, graph="asks", thread_id="hostile-asks"),
            await post_run(srv.client, graph="human_typed"),
            await post_run(srv.client, graph="human_typed"),
            await post_run(srv.client, graph="parallel"),
            await post_run(srv.client, graph="auth"),
            await post_run(
                srv.client, graph="eventual", config={"configurable": {"keys": ["hostile.go"]}}
            ),
            await post_run(srv.client, graph="sleeper", config={"configurable": {"until": FAR}}),
        ]
        for run in (done, failed):
            await wait_result(srv.client, run["id"])
            known.runs.append(run["id"])
        for run in waiting:
            snap = await _waiting(srv.client, run["id"])
            known.runs.append(run["id"])
            known.waits.extend((run["id"], w["id"]) for w in snap["waits"])
        known.threads = sorted({done["thread_id"], failed["thread_id"], "hostile-asks"})
    assert len(known.waits) >= 8
    return known


def _state(db: Path) -> tuple[Any, ...]:
    """What a refused request must not change: the rows of every table the API writes,
    and the mutable columns of runs and waits."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        counts = tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
        runs = conn.execute(
            "SELECT id, status, last_seq, updated_at FROM outlast_runs ORDER BY pos"
        ).fetchall()
        waits = conn.execute("SELECT id, status, answer FROM outlast_waits ORDER BY id").fetchall()
    return counts, runs, waits


def _fuzzing_schema(spec: dict[str, Any]) -> schemathesis.BaseSchema:
    """The app's own document, with one fact it does not state: run ids are UUIDs (the
    server answers anything else with 404). Without it schemathesis cannot make a negative
    case for the routes under ``/v1/runs/{run_id}``."""
    spec = copy.deepcopy(spec)
    # Without a worker (the test's), a run never ends, and a request that waits for a
    # run's end (LangGraph's /wait and /join, kept alive by heartbeats as on LangGraph's
    # server) would wait as long: those are tested where runs end (test_lg_sdk).
    spec["paths"] = {
        path: operations
        for path, operations in spec["paths"].items()
        if not path.endswith(("/wait", "/join"))
    }
    for operations in spec["paths"].values():
        for operation in operations.values():
            for param in operation.get("parameters", []):
                if param["in"] == "path" and param["name"] == "run_id":
                    param["schema"] = {"type": "string", "format": "uuid"}
    return schemathesis.openapi.from_dict(spec)


def _negated(case: Case) -> set[str]:
    """The parts of a case schemathesis made invalid on purpose: aiming must leave them be,
    or a negative case turns into a valid one that the server rightly accepts."""
    meta = case.meta
    if meta is None:
        return set()
    return {str(where.value) for where, info in meta.components.items() if info.mode.is_negative}


def _aimed(strategy: st.SearchStrategy[Case], known: Known) -> st.SearchStrategy[Case]:
    """Often, point a generated case at something that exists."""

    @st.composite
    def cases(draw: st.DrawFn) -> Case:
        case = draw(strategy)
        negated = _negated(case)
        params = case.path_parameters
        body = case.body if "body" not in negated and isinstance(case.body, dict) else None
        if "path" not in negated:
            if case.path.endswith("/input") and draw(often):
                run_id, wait_id = draw(st.sampled_from(known.waits))
                params["run_id"] = run_id
                if body is not None:
                    body["wait_id"] = wait_id
                    if draw(st.booleans()):
                        body["value"] = draw(st.one_of(st.integers(-2, 3), st.text(max_size=8)))
            elif "run_id" in params and draw(st.booleans()):
                params["run_id"] = draw(st.sampled_from(known.runs))
            if "thread_id" in params and draw(st.booleans()):
                params["thread_id"] = draw(st.sampled_from(known.threads))
            if "key" in params and draw(st.booleans()):
                params["key"] = draw(st.sampled_from(known.keys))
        if body is not None and case.path.endswith("/runs") and draw(st.booleans()):
            body["graph"] = draw(st.sampled_from(GRAPHS))
            if case.path == "/v1/runs" and draw(st.booleans()):
                body["thread_id"] = draw(st.sampled_from(known.threads))
        names = {p["name"].lower() for p in case.operation.definition.raw.get("parameters", [])}
        if "idempotency-key" in names and "header" not in negated and draw(st.booleans()):
            for name in [h for h in case.headers if h.lower() == "idempotency-key"]:
                del case.headers[name]
            case.headers["Idempotency-Key"] = draw(st.sampled_from(IDEMPOTENCY_KEYS))
        return case

    return cases()


def _content_type(headers: Any) -> str:
    for name, value in headers.items():
        if name.lower() == "content-type" and value:
            return str(value[0] if isinstance(value, list) else value)
    return ""


def _verdict(
    status: int, ctype: str, text: str, before: Any, after: Any, path: str = "/v1"
) -> list[str]:
    """What is wrong with one answer (nothing, usually). The LangGraph face answers
    errors as its clients read them, ``{"detail": "..."}``; ``/v1`` with problem details."""
    found = []
    if status >= 500:
        found.append(f"server error {status}")
    if 400 <= status < 600 and not path.startswith("/v1"):
        try:
            detail = json.loads(text).get("detail")
        except (ValueError, AttributeError):
            detail = None
        if not isinstance(detail, str) or not detail:
            found.append(f"{status} on the LangGraph face without a string detail")
    elif 400 <= status < 600:
        if ctype.split(";")[0].strip() != "application/problem+json":
            found.append(f"{status} with content-type {ctype!r}, not application/problem+json")
        else:
            try:
                body = json.loads(text)
            except ValueError:
                return [*found, f"{status} problem that is not JSON"]
            for member in ("title", "detail"):
                if not isinstance(body.get(member), str) or not body[member]:
                    found.append(f"{status} problem without a {member}")
            if body.get("status") != status:
                found.append(f"{status} problem says status {body.get('status')!r}")
    if 400 <= status < 500 and before != after:
        found.append(f"refused with {status}, but the database changed")
    return found


class Fuzzer:
    """Sends requests, one at a time, and keeps the distinct failures (one reproduction
    each) and what came back, by operation and status."""

    def __init__(self, url: str, db: Path) -> None:
        self.url, self.db = url, db
        self.session = requests.Session()
        self.failures: dict[str, str] = {}
        self.seen: dict[str, dict[int, int]] = {}
        self.unsatisfied: list[str] = []

    def record(self, label: str, status: int, found: list[str], repro: str) -> None:
        by_status = self.seen.setdefault(label, {})
        by_status[status] = by_status.get(status, 0) + 1
        for problem in found:
            self.failures.setdefault(f"{label}: {problem}", repro)

    def schemathesis(self, schema: schemathesis.BaseSchema, known: Known) -> None:
        """Every operation of the document, positive then negative. Cancels go last: they
        end the waits the answers aim at."""
        operations = [result.ok() for result in schema.get_all_operations()]
        operations.sort(key=lambda op: op.path.endswith("/cancel"))
        for operation in operations:
            raw = operation.definition.raw
            params = raw.get("parameters", [])
            # Routes that take only an id in the path have less to explore, and routes that
            # take nothing have no invalid request.
            rich = "requestBody" in raw or any(p["in"] != "path" for p in params)
            for mode, examples in EXAMPLES.items():
                if mode == GenerationMode.NEGATIVE and not (params or "requestBody" in raw):
                    continue

                @settings(FUZZ, max_examples=examples if rich else examples // 3)
                @given(case=_aimed(operation.as_strategy(generation_mode=mode), known))
                def check(case: Case) -> None:
                    before = _state(self.db)
                    response = case.call(base_url=self.url, session=self.session, timeout=20)
                    after = _state(self.db)
                    status, text = response.status_code, response.text
                    found = _verdict(
                        status,
                        _content_type(response.headers),
                        text,
                        before,
                        after,
                        case.operation.path,
                    )
                    try:
                        case.validate_response(
                            response, checks=[not_a_server_error, negative_data_rejection]
                        )
                    except FailureGroup as group:
                        found.extend(str(f.title) for f in group.exceptions)
                    repro = f"{case.as_curl_command()}\n  -> {status} {text[:300]}"
                    self.record(case.operation.label, status, found, repro)

                try:
                    check()
                except Unsatisfiable:
                    # schemathesis found no request the document forbids among the ones it
                    # drew (a path of bare ids has few); that is no finding about the server,
                    # and the positive examples of the operation still ran.
                    if mode != GenerationMode.NEGATIVE:
                        raise
                    self.unsatisfied.append(operation.label)

    def hostile(self, known: Known) -> None:
        """What the document does not describe: any JSON (lone surrogates, NUL, huge and
        non-finite numbers, deep nesting) in the right fields and the wrong ones, bytes
        that are not JSON, other content types, tampered cursors and odd headers."""

        @settings(FUZZ, max_examples=HOSTILE_EXAMPLES)
        @given(request=hostile_requests(known))
        def check(request: Hostile) -> None:
            before = _state(self.db)
            response = self.session.request(
                request.method,
                self.url + request.path,
                params=request.params,
                headers=request.headers,
                data=request.body,
                timeout=20,
            )
            after = _state(self.db)
            status, text = response.status_code, response.text
            found = _verdict(
                status, _content_type(response.headers), text, before, after, request.path
            )
            repro = f"{request}\n  -> {status} {text[:300]}"
            self.record(f"hostile {request.method} {request.route}", status, found, repro)

        check()


# Text a JSON parser accepts and a database may not: NUL, lone surrogates, controls.
nasty_text = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(categories=["Cs", "Cc"]), min_size=1, max_size=4),
    st.sampled_from(["\x00", "\ud800", "a\x00b", "\udfff", "", " ", "\u2028"]),
)
nasty_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**40, -(10**40), 2**63, 10**4000, 1e308]),
    st.floats(),  # NaN and the infinities go out as NaN / Infinity, which Python parses
    nasty_text,
)
nasty_json = st.recursive(
    nasty_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(nasty_text, inner, max_size=3),
    max_leaves=12,
)
nasty_object = st.dictionaries(nasty_text, nasty_json, max_size=3)
CONFIG = ["configurable", "tags", "metadata", "recursion_limit", "max_concurrency", "run_name"]
CONTENT_TYPES = ["application/json"] * 3 + ["application/json; charset=utf-8", "text/plain"]
ODD_BODIES = ["[" * 3000 + "]" * 3000, '{"input": {"a": 1, "a": 2}}', "\ufeff{}", "", "null"]
# Header values an HTTP client sends and uvicorn's parser takes: visible Latin-1.
HEADER_CHARS = "".join(chr(c) for c in [*range(0x21, 0x7F), *range(0xA1, 0x100)])
header_text = st.text(alphabet=HEADER_CHARS, min_size=1, max_size=40)
query_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20)


@dataclass
class Hostile:
    method: str
    route: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def _list_cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


forged_cursors = (st.integers(-5, 10**6) | st.integers(2**62, 10**30)).map(
    lambda n: _list_cursor(f"p{n}")
)


@st.composite
def hostile_requests(draw: st.DrawFn, known: Known) -> Hostile:
    run = draw(st.sampled_from(known.runs))
    route = draw(
        st.sampled_from(
            [
                "POST /v1/runs",
                "POST /v1/threads/{thread_id}/runs",
                "POST /v1/runs/{run_id}/input",
                "POST /v1/runs/{run_id}/cancel",
                "POST /v1/signals/{key}",
                "GET /v1/runs",
                "GET /v1/runs/{run_id}/events",
                "GET /v1/threads/{thread_id}/history",
            ]
        )
    )
    method, template = route.split(" ")
    path = template.format(
        run_id=run,
        thread_id=draw(st.sampled_from(known.threads)),
        key=draw(st.sampled_from(known.keys)),
    )
    request = Hostile(method, template, path)
    if draw(st.booleans()):
        request.headers["Idempotency-Key"] = draw(
            st.one_of(st.sampled_from(IDEMPOTENCY_KEYS), header_text)
        )
    if method == "GET":
        if template == "/v1/runs":
            request.params = draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "thread_id": st.sampled_from(known.threads) | query_text,
                        "status": st.just("waiting") | query_text,
                        "limit": (st.integers(1, 200) | st.integers()).map(str),
                        # a client can decode the cursors it gets and forge others
                        "cursor": query_text | forged_cursors | forged_cursors,
                    },
                )
            )
        elif template.endswith("/events"):
            request.params = draw(st.fixed_dictionaries({}, optional={"after": query_text}))
            if draw(st.booleans()):
                request.headers["Last-Event-ID"] = draw(header_text)
        else:
            request.params = draw(
                st.fixed_dictionaries(
                    {}, optional={"before": query_text, "limit": st.integers(-5, 500).map(str)}
                )
            )
        return request
    # Mostly a body that is right but for one field, so the hostile value gets past the
    # other checks and reaches the one that must catch it.
    body: dict[str, Any]
    if template.endswith("/runs"):
        body = {"graph": draw(st.sampled_from(GRAPHS))}
        name = draw(st.sampled_from(["input", "metadata", "config", "budget", "thread_id"]))
        body[name] = draw(
            {
                "input": nasty_object,
                "metadata": nasty_object,
                "config": st.fixed_dictionaries({}, optional=dict.fromkeys(CONFIG, nasty_json)),
                "budget": nasty_json,
                "thread_id": nasty_text,
            }[name]
        )
    elif template.endswith("/input"):
        run_id, wait_id = draw(st.sampled_from(known.waits))
        request.path = f"/v1/runs/{run_id}/input"
        body = {"wait_id": wait_id, "value": draw(nasty_json)}
    elif template.endswith("/cancel"):
        body = {"reason": draw(nasty_text)}
    else:
        body = {"payload": draw(nasty_json)}
    kind = draw(st.sampled_from(["shaped"] * 4 + ["any JSON", "not JSON", "odd"]))
    text: str | bytes = {
        "shaped": lambda: json.dumps(body),
        "any JSON": lambda: json.dumps(draw(nasty_json)),
        "not JSON": lambda: draw(st.binary(max_size=40)),
        "odd": lambda: draw(st.sampled_from(ODD_BODIES)),
    }[kind]()
    request.body = text.encode() if isinstance(text, str) else text
    request.headers["Content-Type"] = draw(st.sampled_from(CONTENT_TYPES))
    return request


# Every operation of both faces, a few hundred requests each: about a minute alone, two
# or three on a loaded machine (-n 6 on two cores), never the default 120 s limit.
@pytest.mark.timeout(600)
@pytest.mark.long
async def test_fuzzed_api_never_fails_and_refusals_write_nothing(
    store: Store, tmp_path: Path
) -> None:
    known = await _seed(store)
    # No worker: only the fuzzed requests write. Short clocks, so the result long-poll and
    # the event stream are fuzzed too and a stream of a live run ends quickly.
    fast = make_settings(rate_limit=0, result_wait_max=0.05, stream_max_seconds=0.05)
    async with serve(store, fast, with_worker=False) as srv:
        schema = _fuzzing_schema(srv.app.openapi())
        fuzzer = Fuzzer(srv.url, tmp_path / "outlast.db")
        await asyncio.to_thread(fuzzer.schemathesis, schema, known)
        await asyncio.to_thread(fuzzer.hostile, known)
    failures, seen = fuzzer.failures, fuzzer.seen
    assert not failures, "\n\n".join(f"{k}\n  {v}" for k, v in sorted(failures.items()))
    labels = set(seen)
    for must in (
        "POST /v1/runs",
        "POST /v1/runs/{run_id}/input",
        "POST /v1/runs/{run_id}/cancel",
        "POST /v1/signals/{key}",
        "POST /v1/threads/{thread_id}/runs",
        "GET /v1/runs/{run_id}/events",
    ):
        assert must in labels, sorted(labels)
        assert must not in fuzzer.unsatisfied, fuzzer.unsatisfied
    # The aiming works: answers were taken and refused, runs accepted and refused.
    assert seen["POST /v1/runs/{run_id}/input"].get(202), seen
    assert seen["POST /v1/runs/{run_id}/input"].get(409), seen
    assert seen["POST /v1/runs"].get(202) and seen["POST /v1/runs"].get(422), seen
    assert seen["POST /v1/threads/{thread_id}/runs"].get(202), seen


# What the fuzzing found, pinned: each was a 500 (the NUL ones on Postgres only) or an
# accepted run that could only fail.
FOUND = [
    ("POST", "/v1/runs", {"input": {"\ud800": 1}}, 422),
    ("POST", "/v1/runs", {"metadata": {"note": "\udfff"}}, 422),
    ("POST", "/v1/threads/{thread}/runs", {"input": {"x": ["\ud800"]}}, 422),
    ("POST", "/v1/runs/{run}/input", {"wait_id": "{wait}", "value": "\ud800"}, 422),
    ("POST", "/v1/signals/hostile.key", {"payload": {"\ud800": None}}, 422),
    ("POST", "/v1/runs/{run}/cancel", {"reason": "a\x00b"}, 422),
    ("GET", "/v1/runs?cursor=" + _list_cursor(f"p{2**64}"), None, 400),
    ("GET", "/v1/runs?thread_id=%00", None, 422),
    ("GET", "/v1/threads/{thread}/history?before=%00", None, 422),
    # accepted, and then the run failed in the worker
    ("POST", "/v1/runs", {"config": {"tags": 5}}, 422),
    ("POST", "/v1/runs", {"config": {"max_concurrency": "x"}}, 422),
    ("POST", "/v1/runs", {"config": {"metadata": []}}, 422),
]


async def _count_runs(store: Store) -> int:
    return len(await store.list_runs(thread_id=None, status=None, limit=1000, before=None))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_what_the_fuzzing_found_is_refused_and_changes_nothing(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks", thread_id="hostile-found")
        snap = await _waiting(srv.client, run["id"])
        before = (snap["last_seq"], await _count_runs(store))
        for method, template, body, status in FOUND:
            path = template.format(run=run["id"], thread="hostile-found")
            content = None
            if body is not None:  # escaped: httpx would refuse to encode a lone surrogate
                content = json.dumps(body).replace("{wait}", snap["wait"]["id"]).encode()
            response = await srv.client.request(
                method, path, content=content, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == status, (path, body, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["title"] and response.json()["detail"]
        # LangGraph's face ({"detail"}): a NUL in `before` reached the query model inside
        # the route, a 500
        history = await srv.client.get("/threads/hostile-found/history?before=%1A%00")
        assert history.status_code == 422 and history.json()["detail"], history.text
        # an offset past what a database binds: an OverflowError, a 500
        huge = 232505086207991906304
        for path, body in (
            ("/assistants/search", {"offset": huge}),
            ("/threads/search", {"offset": huge}),
            ("/store/items/search", {"namespace_prefix": [], "offset": huge}),
        ):
            found = await srv.client.post(path, json=body)
            assert found.status_code == 422 and found.json()["detail"], (path, found.text)
        listed = await srv.client.get(f"/threads/hostile-found/runs?offset={huge}")
        assert listed.status_code == 422, listed.text
        after = await _waiting(srv.client, run["id"])
        assert after["waits"] == snap["waits"]
        assert (after["last_seq"], await _count_runs(store)) == before


# -- properties: the event cursor -------------------------------------------------------

cursor_text = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.from_regex(r"\s*[0-9]{1,20}\s*", fullmatch=True),
)


@given(header=cursor_text, after=cursor_text)
def test_a_cursor_parses_to_a_seq_or_is_refused_with_400(
    header: str | None, after: str | None
) -> None:
    try:
        seq = parse_cursor(header, after)
    except InvalidCursor as exc:
        assert exc.status == 400 and "non-negative integer" in str(exc)
        return
    assert isinstance(seq, int) and seq >= 0
    raw = header if header not in (None, "") else after
    assert seq == (int(raw.strip()) if raw not in (None, "") else 0)


@given(seq=st.integers(min_value=0, max_value=10**18 - 1), other=cursor_text)
def test_a_valid_last_event_id_wins_over_after(seq: int, other: str | None) -> None:
    assert parse_cursor(str(seq), other) == seq
    assert parse_cursor(None, str(seq)) == seq
    assert parse_cursor("", str(seq)) == seq
    assert parse_cursor(f" {seq}\n", None) == seq


# -- properties: the idempotency fingerprint --------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
bodies = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


def _reordered(value: Any, rng: Any) -> Any:
    if isinstance(value, dict):
        items = [(k, _reordered(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_reordered(v, rng) for v in value]
    return value


@PROPERTIES
@given(body=bodies, rng=st.randoms(use_true_random=False), indent=st.none() | st.integers(0, 4))
def test_fingerprint_ignores_key_order_and_whitespace(
    body: dict[str, Any], rng: Any, indent: int | None
) -> None:
    compact = json.loads(json.dumps(body, separators=(",", ":")))
    spaced = json.loads(json.dumps(_reordered(body, rng), indent=indent, separators=(" , ", " : ")))
    assert fingerprint(compact) == fingerprint(spaced) == fingerprint(body)


@PROPERTIES
@given(a=bodies, key=st.text(max_size=8), value=json_values, other=bodies)
def test_fingerprint_tells_different_bodies_apart(
    a: dict[str, Any], key: str, value: Any, other: dict[str, Any]
) -> None:
    """A body one member away, and an unrelated one. Compared as JSON: 1 == 1.0 == True
    in Python, but they are different requests."""
    for b in ({**a, key: value}, other):
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            assert fingerprint(a) != fingerprint(b)


@PROPERTIES
@given(body=bodies)
def test_fingerprint_is_stable(body: dict[str, Any]) -> None:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert fingerprint(body) == fingerprint(copy.deepcopy(body))
    assert fingerprint(body) == hashlib.sha256(canonical.encode()).hexdigest()


def test_fingerprint_is_the_same_across_releases() -> None:
    """Stored fingerprints outlive the process: a change here breaks every replay."""
    assert (
        fingerprint({"b": [1, "é"], "a": None})
        == hashlib.sha256('{"a":null,"b":[1,"é"]}'.encode()).hexdigest()
    )


@PROPERTIES
@given(input=bodies, rng=st.randoms(use_true_random=False))
def test_a_retried_run_request_has_the_same_fingerprint(input: dict[str, Any], rng: Any) -> None:
    def made(value: dict[str, Any]) -> str:
        request = RunRequest(graph=None, input=value, config={"tags": ["x"]}, metadata={})
        return new_run(request, graphs=["steps"], max_attempts=3).fingerprint

    assert made(input) == made(_reordered(input, rng))
    assume(input != {"other": 1})
    assert made(input) != made({"other": 1})


# -- properties: answers against a wait's schema ----------------------------------------


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """A schema of one of a few shapes, and a value that satisfies it."""
    shape = draw(st.sampled_from(["integer", "number", "string", "enum", "array", "object"]))
    if shape == "integer":
        low = draw(st.integers(-100, 100))
        high = draw(st.integers(low, low + 1000))
        return {"type": "integer", "minimum": low, "maximum": high}, draw(st.integers(low, high))
    if shape == "number":
        step = draw(st.sampled_from([0.5, 0.25, 2, 5]))
        return {"type": "number", "multipleOf": step}, draw(st.integers(-1000, 1000)) * step
    if shape == "string":
        low = draw(st.integers(0, 5))
        high = draw(st.integers(low, 20))
        return {"type": "string", "minLength": low, "maxLength": high}, draw(
            st.text(min_size=low, max_size=high)
        )
    if shape == "enum":
        options = draw(st.lists(json_scalars, min_size=1, max_size=4))
        return {"enum": options}, draw(st.sampled_from(options))
    if shape == "array":
        return {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}, draw(
            st.lists(st.booleans(), max_size=3)
        )
    names = draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3, unique=True))
    schema = {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": names,
        "additionalProperties": False,
    }
    return schema, {n: draw(st.text(max_size=5)) for n in names}


hostile_values = st.one_of(
    json_values,
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
)


@given(pair=schema_and_value())
def test_a_value_that_matches_the_schema_is_taken(pair: tuple[dict[str, Any], Any]) -> None:
    schema, value = pair
    check_against(schema, value)


@given(pair=schema_and_value(), value=hostile_values)
def test_any_value_is_taken_or_refused_with_422(
    pair: tuple[dict[str, Any], Any], value: Any
) -> None:
    schema, _ = pair
    try:
        valid = jsonschema.validators.validator_for(schema)(schema).is_valid(value)
    except OverflowError:
        valid = False  # a number too large to compare is not a valid answer
    try:
        check_against(schema, value)
    except InvalidAnswer as exc:
        assert exc.status == 422 and str(exc)
        assert not valid
        return
    assert valid


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "("},  # not a regex
        {"type": "strin"},
        {"minimum": "x"},
        {"$ref": "#"},  # refers to itself forever
        {"$ref": "#/definitions/nowhere"},
        {"$ref": "https://example.invalid/schema.json"},  # never fetched
    ],
)
def test_a_broken_wait_schema_refuses_the_answer_without_crashing(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidAnswer):
        check_against(schema, "anything")
