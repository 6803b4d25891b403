"""Secrets at rest: what outlast must keep to use later (a webhook's signing secret, the
credentials a person gives an ``auth`` wait) is stored encrypted with Fernet
(``cryptography``), never as it was given.

The keys come from ``OUTLAST_SECRET_KEYS`` (comma-separated; the first encrypts, every
one decrypts, so a key is rotated by putting the new one first). Without it, a key is
made once in ``data_dir/secret.key`` (mode 0600): right for the embedded store on one
machine, wrong for several machines on one Postgres, which must share the variable. A
ciphertext that no key opens is an error that says so, not a silent failure to sign.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from outlast.config import Settings
from outlast.errors import OutlastError
from outlast.vocabulary import DIGEST, SEALED

KEY_FILE = "secret.key"


class SecretUnreadable(OutlastError):
    """A stored secret that none of the configured keys decrypts (the key changed)."""

    status = 500
    title = "Stored secret unreadable"
    retryable = False


class SecretBox:
    def __init__(self, keys: list[bytes]) -> None:
        if not keys:
            raise ValueError("a SecretBox needs at least one key")
        self._keys = [Fernet(k) for k in keys]
        self._fernet = MultiFernet(self._keys)
        self._primary = base64.urlsafe_b64decode(keys[0])
        # A key of its own for digests, derived from the encrypting key: a digest must not
        # be a plain hash (a short password would fall to a dictionary).
        self._mac_key = self.derive(b"outlast answer digest")

    def derive(self, purpose: bytes) -> bytes:
        """A key for one purpose (digests, stream tokens), derived from the encrypting
        key: every process that shares the keys derives the same one."""
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(
            self._primary
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        raw = settings.secret_keys.get_secret_value() if settings.secret_keys else None
        return _box(raw, settings.data_dir.resolve())

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable(
                "a stored secret was encrypted with a key that is not configured "
                "(OUTLAST_SECRET_KEYS or data_dir/secret.key changed)"
            ) from None

    def digest(self, secret: str) -> str:
        return hmac.new(self._mac_key, secret.encode(), hashlib.sha256).hexdigest()

    def seal_answer(self, value: Any) -> dict[str, str]:
        """An answer (any JSON) as it is stored: ``{"sealed", "digest"}``."""
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        return {SEALED: self.seal(text), DIGEST: self.digest(text)}

    def open_answer(self, stored: dict[str, str]) -> Any:
        return json.loads(self.open(stored[SEALED]))

    def which_key(self, sealed: str) -> int | None:
        """The position of the configured key that opens ``sealed`` (0: the first, which
        encrypts), or None when none does."""
        for position, key in enumerate(self._keys):
            try:
                key.decrypt(sealed.encode())
            except InvalidToken:
                continue
            return position
        return None

    def rotate(self, sealed: str) -> str:
        """The same secret, encrypted with the first key (``outlast secrets rotate``)."""
        try:
            return self._fernet.rotate(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable("a stored secret is encrypted with no configured key") from None


@functools.lru_cache(maxsize=4)
def _box(raw: str | None, folder: Path) -> SecretBox:
    """One box per configuration: the key file is read once, not per request."""
    if raw is not None:
        keys = [k.strip().encode() for k in raw.split(",") if k.strip()]
        try:
            return SecretBox(keys)
        except ValueError as exc:
            raise ValueError(
                "OUTLAST_SECRET_KEYS must be Fernet keys, as "
                "cryptography.fernet.Fernet.generate_key() makes them"
            ) from exc
    return SecretBox([_key_file(folder)])


def _key_file(folder: Path) -> bytes:
    """The key in ``folder/secret.key``, made the first time. ``O_EXCL``: of processes
    starting together, one writes the key and the others read it."""
    path = folder / KEY_FILE
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(Fernet.generate_key())
    for _ in range(100):  # another process may be between its open and its write
        key = path.read_bytes().strip()
        if key:
            return key
        os.sched_yield()
    raise RuntimeError(f"{path} is empty")
