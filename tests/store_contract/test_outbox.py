"""The outbox: subscriptions, deliveries written with the event that causes them (by the
trigger of migration 0012), one claimer at a time, settled with each attempt."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import pytest

from outlast.errors import IdempotencyKeyReused
from outlast.store import Store, WaitSpec
from outlast.store.outbox import (
    Claimed,
    DeliveryNotDead,
    DeliveryNotFound,
    NewWebhook,
    Outcome,
    Webhook,
)
from outlast.store.records import EventDraft
from outlast.vocabulary import DeliveryStatus, EventType, RunStatus
from tests.store_contract.support import claimed
from tests.util import new_run

OK = Outcome(200, None, 3.0)
FAILED = Outcome(500, None, 4.0)


class Hooks:
    """A principal of the test's own and the subscriptions it made."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.principal = f"p-{uuid.uuid4().hex[:8]}"
        self.made: list[Webhook] = []

    async def add(self, *events: str, **fields: object) -> Webhook:
        new = NewWebhook(
            url="https://example.com/hook",
            events=tuple(events),
            principal=self.principal,
            **fields,  # type: ignore[arg-type]
        )
        store = self.store
        hook, created = await store.create_webhook(new)
        assert created
        self.made.append(hook)
        return hook

    async def finished(self, principal: str | None = None) -> str:
        """A run of ``principal`` (the test's by default) that completed."""
        base = new_run()
        run, lease = await claimed(
            self.store, dataclasses.replace(base, principal=principal or self.principal)
        )
        await self.store.finish(
            lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {"result": 1})
        )
        return run.id

    async def mine(self, worker: str = "w", hold: float = 30) -> list[Claimed]:
        ids = {h.id for h in self.made}
        store = self.store
        got = await store.claim_deliveries(worker, hold, 100)
        return [c for c in got if c.webhook.id in ids]


@pytest.fixture
def hooks(store: Store) -> Hooks:
    return Hooks(store)


async def test_subscriptions_belong_to_their_principal(store: Store, hooks: Hooks) -> None:
    hook = await hooks.add(EventType.RUN_COMPLETED, EventType.RUN_WAITING, secret="sealed")
    assert hook.events == ("run.completed", "run.waiting") and hook.format == "outlast"
    assert hook.secret == "sealed" and hook.run_id is None and not hook.once
    assert await store.get_webhook(hook.id, hooks.principal) == hook
    assert await store.get_webhook(hook.id, "someone-else") is None
    assert await store.get_webhook("not-a-uuid", hooks.principal) is None
    assert [h.id for h in await store.list_webhooks(hooks.principal)] == [hook.id]
    assert await store.list_webhooks("someone-else") == []
    assert not await store.delete_webhook(hook.id, "someone-else")
    assert await store.delete_webhook(hook.id, hooks.principal)
    assert not await store.delete_webhook(hook.id, hooks.principal)
    assert await store.list_webhooks(hooks.principal) == []


async def test_a_retried_create_finds_the_subscription_it_made(store: Store, hooks: Hooks) -> None:
    new = NewWebhook(
        url="https://example.com/a",
        events=("run.completed",),
        principal=hooks.principal,
        idempotency_key="k1",
        fingerprint="f1",
    )
    first, created = await store.create_webhook(new)
    again, created_again = await store.create_webhook(new)
    assert created and not created_again and again == first
    with pytest.raises(IdempotencyKeyReused):
        await store.create_webhook(dataclasses.replace(new, fingerprint="f2"))
    other, created = await store.create_webhook(dataclasses.replace(new, principal="another"))
    assert created and other.id != first.id  # keys are per principal
    assert len(await store.list_webhooks(hooks.principal)) == 1


async def test_an_event_writes_one_delivery_per_matching_subscription(
    store: Store, hooks: Hooks
) -> None:
    wanted = await hooks.add(EventType.RUN_COMPLETED)
    other = await hooks.add(EventType.RUN_FAILED)  # subscribed to another event
    run_id = await hooks.finished()
    await hooks.finished(principal=f"{hooks.principal}-other")  # another principal's run
    (delivery,) = await store.list_deliveries(wanted.id)
    assert await store.list_deliveries(other.id) == []
    assert (delivery.run_id, delivery.type, delivery.status) == (
        run_id,
        "run.completed",
        DeliveryStatus.PENDING,
    )
    run = await store.get_run(run_id)
    assert run is not None and delivery.seq == run.last_seq
    payload = delivery.payload
    assert payload["type"] == "run.completed" and payload["timestamp"].endswith("Z")
    assert payload["data"] == {
        "run_id": run_id,
        "seq": delivery.seq,
        "thread_id": run.thread_id,
        "graph": run.graph,
        "status": "completed",
        "event": {"result": 1},
    }


async def test_a_run_scoped_subscription_hears_its_run_only_and_once_means_once(
    store: Store, hooks: Hooks
) -> None:
    run, lease = await claimed(store, dataclasses.replace(new_run(), principal="elsewhere"))
    scoped = await hooks.add(
        EventType.SUPERVISOR_VERDICT, EventType.RUN_COMPLETED, run_id=run.id, once=True
    )
    assert [h.id for h in await store.run_webhooks(run.id)] == [scoped.id]
    assert await store.list_webhooks(hooks.principal) == []  # not a principal-wide one
    await hooks.finished()  # the principal's other run: not this subscription's
    verdict = EventDraft(EventType.SUPERVISOR_VERDICT, {"verdict": "renew"})
    await store.append(lease, [verdict, verdict])
    await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
    (only,) = await store.list_deliveries(scoped.id)
    assert (only.run_id, only.type) == (run.id, "supervisor.verdict")


async def test_claims_are_disjoint_and_a_lapsed_claim_is_claimed_again(
    store: Store, hooks: Hooks
) -> None:
    hook = await hooks.add(EventType.RUN_COMPLETED)
    for _ in range(6):
        await hooks.finished()
    first, second = await asyncio.gather(hooks.mine("a"), hooks.mine("b"))
    ids_a = {c.delivery.id for c in first}
    ids_b = {c.delivery.id for c in second}
    assert not ids_a & ids_b and len(ids_a | ids_b) == 6
    for claim in [*first, *second]:
        assert claim.delivery.status == "delivering" and claim.delivery.attempts == 1
        assert claim.webhook == hook
    assert await hooks.mine("c") == []  # all claimed for 30 s


async def test_a_claim_that_lapsed_is_claimed_again_with_the_same_id(
    store: Store, hooks: Hooks
) -> None:
    await hooks.add(EventType.RUN_COMPLETED)
    await hooks.finished()
    (first,) = await hooks.mine("a", hold=0)  # lapsed at once: as if a had died
    (second,) = await hooks.mine("b")
    assert second.delivery.id == first.delivery.id
    assert (first.delivery.attempts, second.delivery.attempts) == (1, 2)
    assert not await store.settle_delivery(first, "a", OK, None)  # a lost it to b
    assert await store.settle_delivery(second, "b", OK, None)
    assert await hooks.mine("c", hold=0) == []  # delivered: never claimed again


async def test_settling_records_each_attempt_and_only_the_holder_moves_it(
    store: Store, hooks: Hooks
) -> None:
    # nothing pending: no time at which to look again (a deliverer told 0 would poll
    # without pause)
    assert await store.next_delivery_in() is None
    hook = await hooks.add(EventType.RUN_COMPLETED)
    await hooks.finished()
    (first,) = await hooks.mine("a", hold=0)
    (second,) = await hooks.mine("b", hold=0)  # a's claim lapsed: b has it now
    assert not await store.settle_delivery(first, "a", OK, None)
    assert await store.settle_delivery(second, "b", FAILED, 0)
    (pending,) = await store.list_deliveries(hook.id)
    assert pending.status == "pending" and pending.last_error == "HTTP 500"
    assert [(a.n, a.status_code, a.worker_id) for a in pending.history] == [
        (1, 200, "a"),  # recorded: the attempt was made, though it moved nothing
        (2, 500, "b"),
    ]
    (third,) = await hooks.mine("b")  # due again at once (retry_in 0)
    assert third.delivery.attempts == 3
    assert await store.settle_delivery(third, "b", FAILED, 3600)
    wait = await store.next_delivery_in()
    assert wait is not None and 0 <= wait <= 3600
    assert await hooks.mine("b") == []  # not due for an hour
    (later,) = await store.list_deliveries(hook.id)
    assert later.next_at > third.delivery.next_at  # the hour, not the claim's 30 s


async def test_a_delivery_given_up_is_dead(store: Store, hooks: Hooks) -> None:
    hook = await hooks.add(EventType.RUN_COMPLETED)
    await hooks.finished()
    (claim,) = await hooks.mine()
    timeout = Outcome(None, "timed out after 10 s", 10_000.0)
    assert await store.settle_delivery(claim, "w", timeout, None)
    (dead,) = await store.list_deliveries(hook.id, status="dead")
    assert dead.attempts == 1 and dead.last_error == "timed out after 10 s"
    assert await store.list_deliveries(hook.id, status="pending") == []
    assert (await store.count_deliveries()).get("dead", 0) >= 1
    assert await hooks.mine("b", hold=0) == []  # dead is never claimed


async def test_a_dead_delivery_is_retried_by_hand_only(store: Store, hooks: Hooks) -> None:
    hook = await hooks.add(EventType.RUN_COMPLETED)
    await hooks.finished()
    (claim,) = await hooks.mine()
    with pytest.raises(DeliveryNotDead):
        await store.retry_delivery(hook.id, claim.delivery.id)
    await store.settle_delivery(claim, "w", FAILED, None)
    with pytest.raises(DeliveryNotFound):
        await store.retry_delivery(hook.id, str(uuid.uuid4()))
    with pytest.raises(DeliveryNotFound):
        await store.retry_delivery(hook.id, "nope")
    revived = await store.retry_delivery(hook.id, claim.delivery.id)
    assert revived.status == "pending" and revived.attempts == 1
    (again,) = await hooks.mine()
    assert again.delivery.id == revived.id and again.delivery.attempts == 2
    assert await store.settle_delivery(again, "w", OK, None)
    (done,) = await store.list_deliveries(hook.id)
    assert done.status == "delivered" and done.delivered_at is not None
    assert done.last_error is None


async def test_deleting_a_subscription_deletes_its_deliveries(store: Store, hooks: Hooks) -> None:
    hook = await hooks.add(EventType.RUN_COMPLETED)
    await hooks.finished()
    assert len(await store.list_deliveries(hook.id)) == 1
    await store.delete_webhook(hook.id, hooks.principal)
    assert await store.list_deliveries(hook.id) == []
    assert await hooks.mine() == []


async def test_wait_kinds_narrow_which_waits_are_heard(store: Store, hooks: Hooks) -> None:
    human = await hooks.add(EventType.RUN_WAITING, wait_kinds=("human",))
    anything = await hooks.add(EventType.RUN_WAITING)
    for kind in ("timer", "human"):
        mine = dataclasses.replace(new_run(), principal=hooks.principal)
        _, lease = await claimed(store, mine)
        spec = WaitSpec(interrupt_id=f"i-{kind}", kind=kind, prompt="?", wake_in=3600)
        await store.park(lease, [spec], lookback=0)
    (only,) = await store.list_deliveries(human.id)
    assert only.payload["data"]["event"]["kinds"] == ["human"]
    assert len(await store.list_deliveries(anything.id)) == 2
