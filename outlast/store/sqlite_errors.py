"""What a full or failing disk looks like to the rest of outlast: ``StoreFull`` or
``StoreUnavailable``, raised in place of SQLite's own error wherever the SQLite store
touches its files (its transactions, its reads, the checkpointer's group commit, the
item store).

Why here, once: ``sqlite3.OperationalError`` says "database or disk is full" and nothing
else a caller could act on, so the API answered it as an unexpected ``500`` and every
face would have had to recognise it. Mapped at the store, it is the error a database
outage already is: a ``503`` with ``Retry-After`` on every face, and to the worker a
store failure (the run stops writing and is requeued from its last checkpoint). A failed
transaction wrote nothing (SQLite rolled it back), so the same call can simply be made
again once space is freed; nothing needs resetting (``tests/test_full_disk.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from outlast.errors import StoreFull, StoreUnavailable


def unavailable(exc: BaseException, path: Path) -> StoreUnavailable | None:
    """The retryable error ``exc`` is, if it is the disk's (full, or an I/O error) and
    not the statement's; ``None`` otherwise."""
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    # The primary result code: the extended ones (SQLITE_IOERR_WRITE, _FSYNC, _SHMSIZE
    # when the -shm file cannot grow, ...) keep it in their low byte.
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    if primary == sqlite3.SQLITE_FULL:
        return StoreFull(
            f"the disk is full: no space left for {path} ({exc}); nothing was written, "
            "and writes resume by themselves once space is freed"
        )
    if primary == sqlite3.SQLITE_IOERR:
        name = getattr(exc, "sqlite_errorname", "SQLITE_IOERR")
        return StoreUnavailable(f"{path}: {exc} ({name}); nothing was written")
    return None


@contextmanager
def mapped(path: Path) -> Iterator[None]:
    """Raise the disk's errors met inside the block as ``unavailable`` says."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        error = unavailable(exc, path)
        if error is None:
            raise
        raise error from exc
