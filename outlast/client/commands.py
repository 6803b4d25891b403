"""The client's subcommands and their exit codes.

Exit codes: 0 completed (or done), 1 the run failed, 2 the run was cancelled, 3 the server
stayed unreachable past ``--timeout``, 4 the server refused the request, 130 Ctrl-C (the
run goes on: following is only watching).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console

from outlast.client.api import Api, Problem, Refused, Unreachable
from outlast.client.display import Display
from outlast.client.prompt import wants_text
from outlast.client.render import runs_table, snapshot_lines
from outlast.client.session import follow_run, open_waits

UNREACHABLE, REFUSED, INTERRUPTED = 3, 4, 130

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class State:
    """What the Ctrl-C message needs to know, filled in as the command learns it."""

    run_id: str | None = None
    key: str | None = None
    server: str = ""


def _api(args: argparse.Namespace) -> Api:
    return Api(args.server, notice=lambda text: err.print(text, style="yellow", markup=False))


def _deadline(args: argparse.Namespace) -> float:
    return time.monotonic() + float(args.timeout)


def _json(response: Any) -> dict[str, Any]:
    body = response.json()
    return body if isinstance(body, dict) else {"value": body}


def _input_fd(args: argparse.Namespace) -> int | None:
    if args.no_input or sys.stdin is None or sys.stdin.closed:
        return None
    try:
        return sys.stdin.fileno()
    except (OSError, ValueError):
        return None


def _execute(args: argparse.Namespace, main: Callable[[Api], Awaitable[int]]) -> int:
    """Run one command; map the ways it can end that are not the run's own to exit codes."""
    # A parent that ignored SIGINT (a shell's background job) must not make Ctrl-C inert.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    state: State = args.state
    state.server = args.server.rstrip("/")

    async def go() -> int:
        api = _api(args)
        try:
            return await main(api)
        finally:
            await api.aclose()

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        if state.run_id is not None:
            err.print(
                "detached; the run goes on. Reattach with: "
                f"outlast attach {state.run_id} --server {state.server}",
                markup=False,
            )
        elif state.key is not None:
            err.print(
                f"interrupted; if the run was accepted, `outlast run … --key {state.key}` "
                "reaches it again without starting another",
                markup=False,
            )
        else:
            err.print("interrupted")
        return INTERRUPTED
    except Unreachable as exc:
        err.print(f"{exc}; gave up after {args.timeout:g} s", style="red", markup=False)
        return UNREACHABLE
    except Refused as exc:
        err.print(str(exc.problem), style="red", markup=False)
        return REFUSED


def _ok(response: Any) -> dict[str, Any]:
    if not response.is_success:
        raise Refused(Problem.of(response))
    return _json(response)


async def _snapshot(api: Api, run_id: str, deadline: float | None) -> dict[str, Any]:
    return _ok(await api.call("GET", f"/v1/runs/{run_id}", deadline=deadline))


def cmd_run(args: argparse.Namespace) -> int:
    state: State = args.state
    key = args.key or str(uuid.uuid4())
    state.key = key
    body: dict[str, Any] = {"input": {"messages": [{"role": "user", "content": args.task}]}}
    if args.graph:
        body["graph"] = args.graph
    if args.thread:
        body["thread_id"] = args.thread
    if args.config_json:
        body["config"] = args.config_json

    async def main(api: Api) -> int:
        err.print(
            f"idempotency key {key} (re-run with --key {key} for this same run)", markup=False
        )
        response = await api.call("POST", "/v1/runs", json=body, headers={"Idempotency-Key": key})
        snapshot = _ok(response)
        state.run_id = str(snapshot["id"])
        again = (
            " (already accepted with this key)"
            if response.headers.get("Idempotent-Replayed") == "true"
            else ""
        )
        err.print(f"run {state.run_id}{again}", style="bold", markup=False)
        if args.detach:
            out.print(state.run_id, markup=False)
            return 0
        return await follow_run(api, Display(err), snapshot, _input_fd(args))

    return _execute(args, main)


def cmd_attach(args: argparse.Namespace) -> int:
    state: State = args.state
    state.run_id = args.run

    async def main(api: Api) -> int:
        snapshot = await _snapshot(api, args.run, None)
        return await follow_run(api, Display(err), snapshot, _input_fd(args))

    return _execute(args, main)


def cmd_status(args: argparse.Namespace) -> int:
    async def main(api: Api) -> int:
        snapshot = await _snapshot(api, args.run, _deadline(args))
        if args.json:
            out.print_json(data=snapshot)
        else:
            for line in snapshot_lines(snapshot):
                out.print(line, markup=False, soft_wrap=True)
        return 0

    return _execute(args, main)


def cmd_runs(args: argparse.Namespace) -> int:
    params = {"limit": str(args.limit)}
    for name, value in (
        ("status", args.status),
        ("thread_id", args.thread),
        ("cursor", args.cursor),
    ):
        if value:
            params[name] = value

    async def main(api: Api) -> int:
        page = _ok(await api.call("GET", "/v1/runs", params=params, deadline=_deadline(args)))
        runs = [r for r in page.get("runs", []) if isinstance(r, dict)]
        if runs:
            # Piped output is not cut to 80 columns: ids must survive whole.
            wide = out if out.is_terminal else Console(highlight=False, width=250)
            wide.print(runs_table(runs))
        else:
            err.print("no runs")
        if page.get("next_cursor"):
            err.print(f"older runs: outlast runs --cursor {page['next_cursor']}", markup=False)
        return 0

    return _execute(args, main)


def cmd_cancel(args: argparse.Namespace) -> int:
    body = {"reason": args.reason} if args.reason else {}

    async def main(api: Api) -> int:
        path = f"/v1/runs/{args.run}/cancel"
        snapshot = _ok(await api.call("POST", path, json=body, deadline=_deadline(args)))
        out.print(f"run {snapshot.get('id')}: {snapshot.get('status')}", markup=False)
        return 0

    return _execute(args, main)


def cmd_answer(args: argparse.Namespace) -> int:
    async def main(api: Api) -> int:
        deadline = _deadline(args)
        snapshot = await _snapshot(api, args.run, deadline)
        waits = open_waits(snapshot)
        wait_id = args.wait_id or (waits[0].get("id") if waits else None)
        if wait_id is None:
            raise Refused(
                Problem(
                    409,
                    "Not waiting",
                    f"run {args.run} is {snapshot.get('status')}, not waiting for an answer",
                )
            )
        wait = next((w for w in waits if w.get("id") == wait_id), None)
        schema = wait.get("schema") if wait is not None else None
        try:
            value = json.loads(args.value) if args.json or not wants_text(schema) else args.value
        except ValueError as exc:
            raise Refused(Problem(400, "Not JSON", f"this wait wants JSON: {exc}")) from None
        response = await api.call(
            "POST",
            f"/v1/runs/{args.run}/input",
            json={"wait_id": wait_id, "value": value},
            headers={"Idempotency-Key": uuid.uuid4().hex},  # kept across retries
            deadline=deadline,
        )
        answered = _ok(response)  # 409: answered already; 422: does not fit the schema
        out.print(f"answered; run {args.run}: {answered.get('status', '?')}", markup=False)
        return 0

    return _execute(args, main)
