"""SQL lives in ``.sql`` files next to this module, one folder per backend.

``queries.sql`` holds named statements (``-- name: x``), and so does each
``queries_<area>.sql`` beside it (one file per area of the API, so the files stay
readable); numbered files are migrations, applied in order and recorded in
``outlast_migrations``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def _folder(backend: str) -> resources.abc.Traversable:
    return resources.files("outlast.store").joinpath("sql", backend)


_QUERIES = re.compile(r"^queries(_\w+)?\.sql$")


@cache
def queries(backend: str) -> dict[str, str]:
    found: dict[str, str] = {}
    files = sorted(e.name for e in _folder(backend).iterdir() if _QUERIES.match(e.name))
    for file in files:
        text = _folder(backend).joinpath(file).read_text(encoding="utf-8")
        parts = _NAME.split(text)
        # parts = [preamble, name1, body1, name2, body2, ...]
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise ValueError(f"{backend}/{file}: query {name!r} is defined twice")
            found[name] = body.strip().rstrip(";").strip()
    return found


@cache
def migrations(backend: str) -> tuple[Migration, ...]:
    found = []
    for entry in _folder(backend).iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append(
                Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8"))
            )
    return tuple(sorted(found, key=lambda m: m.version))
