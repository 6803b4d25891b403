"""LangGraph's item store on outlast's databases (store/items.py): LangGraph's semantics,
with a namespace tree per principal that no other principal can name, list or search."""

from __future__ import annotations

import pytest
from langgraph.store.base import InvalidNamespaceError

from outlast.store import Store
from outlast.store.items import RESERVED, check_filter, for_principal, principal_label


async def test_items_round_trip_per_principal(store: Store) -> None:
    alice = for_principal(store.items, "alice")
    bob = for_principal(store.items, "bob")
    await alice.aput(("notes", "a"), "k1", {"text": "hi", "n": 1})
    await alice.aput(("notes", "b"), "k2", {"text": "yo", "n": 2})
    await bob.aput(("notes", "a"), "k1", {"text": "bob's"})
    item = await alice.aget(("notes", "a"), "k1")
    assert item is not None and item.value == {"text": "hi", "n": 1}
    assert item.namespace == ("notes", "a")  # the hidden label is taken off
    assert item.created_at.tzinfo is not None and item.updated_at.tzinfo is not None
    other = await bob.aget(("notes", "a"), "k1")
    assert other is not None and other.value == {"text": "bob's"}
    assert await for_principal(store.items, "carol").aget(("notes", "a"), "k1") is None
    found = await alice.asearch(("notes",), filter={"n": {"$gt": 1}})
    assert [(i.namespace, i.key) for i in found] == [(("notes", "b"), "k2")]
    assert sorted(await alice.alist_namespaces(prefix=("notes",))) == [
        ("notes", "a"),
        ("notes", "b"),
    ]
    assert await bob.alist_namespaces() == [("notes", "a")]
    await alice.adelete(("notes", "a"), "k1")
    assert await alice.aget(("notes", "a"), "k1") is None
    assert await bob.aget(("notes", "a"), "k1") is not None
    # underneath, each principal's tree starts with its own label
    raw = await store.items.alist_namespaces()
    assert {ns[0] for ns in raw} == {principal_label("alice"), principal_label("bob")}


async def test_reserved_labels_and_bad_filters_are_refused(store: Store) -> None:
    alice = for_principal(store.items, "alice")
    with pytest.raises(InvalidNamespaceError):
        await alice.aput((RESERVED + "x",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await alice.aput(("langgraph",), "k", {"v": 1})
    with pytest.raises(ValueError):
        check_filter({"a b": 1})
    with pytest.raises(ValueError):
        check_filter({"a": {"$regex": "x"}})
    check_filter({"a.b": {"$eq": 1}})
    assert principal_label("a.b") != principal_label("a%2Eb")
