"""Where secrets are stored sealed, for ``outlast secrets check`` and ``rotate``.

Three places hold ciphertext (``secretbox``): a webhook's signing secret, an A2A push
config's token and credentials (in the webhook's ``extra``), and an ``auth`` wait's
answer (``{"sealed", "digest"}``). The store lists them and replaces one ciphertext with
another, only if it is still the one that was read: a rotation running beside a server
never overwrites a secret that changed meanwhile. Nothing here can open a secret.
"""

from __future__ import annotations

from typing import Any

from outlast.store.records import Sealed
from outlast.store.tx import TxProvider
from outlast.vocabulary import SEALED

_EXTRA = ("token", "credentials")  # sealed fields of a webhook's extra (A2A push)


class SecretsOps(TxProvider):
    async def sealed_secrets(self) -> list[Sealed]:
        found: list[Sealed] = []
        async with self._reading() as tx:
            for row in await tx.rows("sc_webhooks"):
                hook = str(row["id"])
                if row["secret"]:
                    found.append(Sealed("webhooks", hook, "secret", row["secret"]))
                extra = tx.decode_json(row["extra"]) or {}
                found += [Sealed("webhooks", hook, k, extra[k]) for k in _EXTRA if extra.get(k)]
            for row in await tx.rows("sc_waits"):
                answer = tx.decode_json(row["answer"]) or {}
                found.append(Sealed("waits", str(row["id"]), "answer", answer[SEALED]))
        return found

    async def reseal(self, item: Sealed, sealed: str) -> bool:
        """Replace ``item``'s ciphertext with ``sealed``; False if it changed since."""
        async with self._writing() as tx:
            if item.table == "waits":
                rows = await tx.rows("sc_wait_lock", id=item.id)
                answer: Any = tx.decode_json(rows[0]["answer"]) if rows else None
                if not isinstance(answer, dict) or answer.get(SEALED) != item.sealed:
                    return False
                await tx.rows(
                    "sc_wait_set", id=item.id, answer=tx.encode_json({**answer, SEALED: sealed})
                )
                return True
            rows = await tx.rows("sc_webhook_lock", id=item.id)
            if not rows:
                return False
            secret, extra = rows[0]["secret"], tx.decode_json(rows[0]["extra"]) or {}
            if item.field == "secret":
                if secret != item.sealed:
                    return False
                secret = sealed
            else:
                if extra.get(item.field) != item.sealed:
                    return False
                extra = {**extra, item.field: sealed}
            await tx.rows(
                "sc_webhook_set", id=item.id, secret=secret, extra=tx.encode_json(extra or None)
            )
            return True
