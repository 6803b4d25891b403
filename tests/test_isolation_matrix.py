"""Issue 42: the isolation matrix. Every route the app serves (HTTP, WebSocket, A2A's and
MCP's JSON-RPC methods and tools, protocol v2's commands), tried by bob on every kind of
alice's objects it touches: each answer is that face's "no such thing", holds nothing of
alice's, and leaves her object as it was. Once with API keys (principals are tenants),
once with an app's ``auth.py`` whose handlers filter by owner. The table is in
``tests/isolation.py``; a route it does not know fails here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outlast.api.app import create_app
from outlast.config import Settings
from outlast.store import Store
from tests import isolation as iso
from tests.harness import ALICE, BOB, KEYS, make_settings, serve
from tests.mcp_client import connect
from tests.receiver import receiver

AUTH = f"{iso.TESTS}/user_auth_app.py:owners"
MODES = {
    "keys": {"alice": ALICE, "bob": BOB},
    "auth": {"alice": "token-alice", "bob": "token-bob"},
}


def settings(tmp_path: Path, mode: str) -> Settings:
    return make_settings(
        graphs_file=iso.manifest(tmp_path, AUTH if mode == "auth" else None),
        api_keys=KEYS if mode == "keys" else None,
        webhook_allow_private=True,  # alice's webhook and push config post to a local receiver
        result_wait_max=5,
        data_dir=tmp_path,
    )


def table_keys(table: list[iso.Probe]) -> set[iso.RouteKey]:
    return {p.route for p in table} | set(iso.PUBLIC) | set(iso.CARRIERS)


def unknown_and_stale(served: set[iso.RouteKey], known: set[iso.RouteKey]) -> list[str]:
    wrong = [f"served but not in the table: {' '.join(k)}" for k in sorted(served - known)]
    return wrong + [f"in the table but not served: {' '.join(k)}" for k in sorted(known - served)]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_table_knows_every_route_the_app_serves(tmp_path: Path, mode: str) -> None:
    app = create_app(settings(tmp_path, mode), with_worker=False, migrate=False)
    served = iso.served(app)
    # each table the app serves is read from it, and is not empty
    assert iso.a2a_methods(app) and iso.mcp_methods(app) and iso.protocol_commands()
    # the tools are listed by a live server (the matrix compares them)
    known = {k for k in table_keys(iso.probes(mode)) if k[0] != "MCP tool"}
    assert unknown_and_stale(served, known) == []
    # and a route added without an entry, or an entry left for a route gone, is named
    app.add_api_route("/v1/unchecked/{thing}", lambda thing: None, methods=["POST"])
    gone = ("GET", "/v1/gone")
    assert unknown_and_stale(iso.served(app), known | {gone}) == [
        "served but not in the table: POST /v1/unchecked/{thing}",
        "in the table but not served: GET /v1/gone",
    ]


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_another_principal_gets_nothing_of_alices_anywhere(
    store: Store, tmp_path: Path, mode: str
) -> None:
    tokens = MODES[mode]
    table = iso.probes(mode)
    with receiver() as hooks:
        async with (
            serve(store, settings(tmp_path, mode)) as srv,
            connect(srv.url, tokens["alice"]) as alice_mcp,
            connect(srv.url, tokens["bob"]) as bob_mcp,
            iso.caller("alice", tokens["alice"], srv.url, alice_mcp) as alice_caller,
            iso.caller("bob", tokens["bob"], srv.url, bob_mcp) as bob,
            iso.caller("nobody", "", srv.url) as nobody,
        ):
            graphs = list(srv.app.state.ctx.registry.names)
            alice = iso.Alice(alice_caller, hooks.url)
            matrix = iso.Matrix(alice, bob, nobody, mode)
            try:
                await matrix.make(iso.GROUPS)
                listed = (await alice_mcp.wire.send_raw_request("tools/list", None))["tools"]
                tools = iso.tool_keys(
                    (t["name"] for t in listed), graphs, matrix.objects["assistant"]["tool"]
                )
                served = iso.served(srv.app) | tools
                failures = unknown_and_stale(served, table_keys(table))
                report = await matrix.run(table, served)
            finally:
                await alice.close()
    report.failures[:0] = failures
    print(report.summary())
    if os.environ.get("OUTLAST_ISOLATION_ANSWERS"):  # every cell's answer, to read them
        print("\n".join(report.answers))
    for failure in report.failures:
        print("  " + failure)
    assert not report.failures, f"{report.summary()}:\n" + "\n".join(report.failures)
