"""Every named query of both dialects says what it is for: a one-line description comment
right under its ``-- name:`` line (a query read on its own, from a log or a profile, is
understood without its caller)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

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
