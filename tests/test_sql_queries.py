"""Every named query of both dialects says what it is for: a one-line description comment
right under its ``-- name:`` line (a query read on its own, from a log or a profile, is
understood without its caller)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from outlast.store.sqlfiles import queries

_NAMED = re.compile(r"^-- name: (\w+)\s*\n(.*)$", re.MULTILINE)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_named_query_has_a_description(backend: str) -> None:
    folder = resources.files("outlast.store").joinpath("sql", backend)
    files = [e for e in folder.iterdir() if re.match(r"^queries(_\w+)?\.sql$", e.name)]
    assert files
    bare = []
    for file in files:
        for name, line in _NAMED.findall(file.read_text(encoding="utf-8")):
            text = line.removeprefix("--").strip()
            if not line.startswith("-- ") or len(text) < 10:
                bare.append(f"{backend}/{file.name}: {name}")
    assert not bare, "queries without a description line:\n" + "\n".join(bare)


def test_sqlite_queries_read_the_clock_defined_once() -> None:
    """SQLite's "now" is the view ``outlast_clock`` (migration 0014), not an expression
    each query spells out again."""
    spelled = [name for name, sql in queries("sqlite").items() if "julianday" in sql]
    assert not spelled, spelled
    assert any("outlast_clock" in sql for sql in queries("sqlite").values())
