"""A small disk to fill: a tmpfs, and a file that takes its every free byte.

Why a tmpfs: a full disk is the fault, and filling the machine's own disk would hit
everything else on it (Postgres, the test suite, the logs). A tmpfs fills in
milliseconds, frees at once, and is gone with its user. Mounting needs root. Used by
``tests/test_full_disk.py`` and by the nemesis's SQLite deployment (bench/nemesis.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_disk(where: Path, megabytes: int = 32) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` at ``where``, unmounted on the way out whatever happened."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(where)],
        check=True,
        capture_output=True,
    )
    try:
        yield where
    finally:
        # lazy: detached now even if a killed process's file is still open there
        subprocess.run(["umount", "--lazy", str(where)], check=True, capture_output=True)


def fill(disk: Path) -> Path:
    """A file that takes every free byte of ``disk`` (to the page), as a runaway log would."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12):
            block = b"\0" * chunk
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler
