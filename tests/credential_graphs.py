"""Graphs and providers for the credential tests: tools that ask for credentials by name.

No node puts a credential in its state: each returns a digest of what it was given, so a
test can tell which value it used while the state (and every checkpoint) holds none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from outlast.credentials import RefreshingProvider
from outlast.nodes import (
    CredentialExpired,
    CredentialMissing,
    credential,
    credential_sync,
    require_auth,
)
from outlast.nodes.waits import sleep_for
from tests.graphs import _single as single


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


class TokenState(TypedDict, total=False):
    first: dict[str, Any]
    second: dict[str, Any]
    got: Any


def _ledger() -> Path:
    return Path(os.environ["OUTLAST_TEST_CREDENTIALS_DIR"])


# -- a provider whose tokens expire a second after they are minted ------------------------


def _mint() -> tuple[str, dt.datetime]:
    folder = _ledger()
    count = len(list(folder.glob("minted-*"))) + 1
    token = f"tok-{count}-{os.getpid()}"
    (folder / f"minted-{count}").write_text(token)
    return token, dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)


short_lived = RefreshingProvider("api", _mint, margin=0.0)


class Refusing:
    """A provider whose refresh token was revoked: it refuses, and says why."""

    async def get(self, name: str) -> Any:
        if name == "api":
            raise CredentialMissing(name, "the refresh token was revoked")
        return None


refusing = Refusing()


async def _use(name: str) -> dict[str, Any]:
    got = await credential(name)
    if got.expired():  # the tool would be refused by the remote side
        raise AssertionError(f"{name} was handed out expired")
    return {"token": digest(got.value), "source": got.source}


async def _first(state: TokenState) -> dict[str, Any]:
    return {"first": await _use("api")}


async def _pause(state: TokenState, config: RunnableConfig) -> dict[str, Any]:
    sleep_for(float(config.get("configurable", {}).get("pause", 1.5)))
    return {}


async def _second(state: TokenState) -> dict[str, Any]:
    return {"second": await _use("api")}


def _build_long_wait() -> Any:
    b = StateGraph(TokenState)
    b.add_node("first", _first)
    b.add_node("pause", _pause)
    b.add_node("second", _second)
    b.add_edge(START, "first")
    b.add_edge("first", "pause")
    b.add_edge("pause", "second")
    b.add_edge("second", END)
    return b.compile()


long_wait = _build_long_wait()


# -- a tool the remote side answers 401 until it gets the accepted token ------------------


async def _picky(state: TokenState) -> dict[str, Any]:
    got = await credential("crm")
    accepted = (_ledger() / "accepted").read_text().strip()
    if got.value != accepted:
        raise CredentialExpired("crm", "the CRM answered 401")
    return {"got": {"token": digest(got.value), "source": got.source}}


picky = single(_picky, TokenState)


async def _asks(state: TokenState) -> dict[str, Any]:
    """``require_auth``: the answer is used, never kept."""
    return {"got": digest(require_auth("vault"))}


asks_auth = single(_asks, TokenState)


def _sync_tool(state: TokenState) -> dict[str, Any]:
    """A sync node (LangGraph runs it on a worker thread) that asks for a credential."""
    got = credential_sync("api")
    return {"got": {"token": digest(got.value), "source": got.source}}


sync_tool = single(_sync_tool, TokenState)
