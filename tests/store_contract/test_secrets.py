"""Secrets at rest: every ciphertext the store holds is listed, and replaced only if it is
still the one that was read (``outlast secrets rotate`` beside a running server)."""

from __future__ import annotations

import uuid

from outlast.store import Sealed, Store, WaitSpec
from outlast.store.outbox import NewWebhook
from outlast.vocabulary import WaitKind, WaitStatus
from tests.store_contract.support import claimed


async def test_sealed_secrets_are_listed_and_resealed_only_if_unchanged(store: Store) -> None:
    principal = f"p-{uuid.uuid4().hex[:8]}"
    hook, _ = await store.create_webhook(
        NewWebhook(
            url="https://example.com/hook",
            events=("run.completed",),
            principal=principal,
            secret="gAAAA-secret",
            extra={"token": "gAAAA-token", "credentials": "gAAAA-cred", "scheme": "Bearer"},
        )
    )
    plain, _ = await store.create_webhook(
        NewWebhook(url="https://example.com/b", events=("run.failed",), principal=principal)
    )
    run, lease = await claimed(store)
    await store.park(lease, [WaitSpec("i-a", WaitKind.AUTH, object={"scope": "gh"})], 0)
    (wait,) = await store.list_waits(run.id, WaitStatus.OPEN)
    await store.answer(run.id, wait.id, {"sealed": "gAAAA-answer", "digest": "d"})
    found = {(s.table, s.id, s.field): s.sealed for s in await store.sealed_secrets()}
    mine = {k: v for k, v in found.items() if k[1] in (hook.id, wait.id, plain.id)}
    assert mine == {
        ("webhooks", hook.id, "secret"): "gAAAA-secret",
        ("webhooks", hook.id, "token"): "gAAAA-token",
        ("webhooks", hook.id, "credentials"): "gAAAA-cred",
        ("waits", wait.id, "answer"): "gAAAA-answer",
    }
    for (table, item_id, field), sealed in mine.items():
        item = Sealed(table, item_id, field, sealed)
        assert await store.reseal(item, sealed + "-new")
        assert not await store.reseal(item, sealed + "-again")  # it changed: refused
    after = await store.get_webhook(hook.id, principal)
    assert after is not None and after.secret == "gAAAA-secret-new"
    assert after.extra == {
        "token": "gAAAA-token-new",
        "credentials": "gAAAA-cred-new",
        "scheme": "Bearer",
    }
    answered = await store.get_wait(run.id, wait.id)
    assert answered.answer == {"sealed": "gAAAA-answer-new", "digest": "d"}
    assert not await store.reseal(Sealed("waits", str(uuid.uuid4()), "answer", "x"), "y")
    assert not await store.reseal(Sealed("webhooks", str(uuid.uuid4()), "secret", "x"), "y")
