"""LangGraph's Store API (long-term memory items) on outlast's own databases.

The items live in LangGraph's own ``BaseStore`` implementations, ``AsyncPostgresStore``
and ``AsyncSqliteStore`` (opened by ``item_backends.py``, configured by ``langgraph.json``'s
``store`` section), so their semantics (namespaces, filters, TTLs, pagination) are
LangGraph's, not a copy of them. outlast adds one thing: every principal gets a namespace
tree of its own. ``PrincipalStore`` puts a hidden first label derived from the principal
in front of every namespace it is handed and takes it off everything it returns, so a
principal cannot name, list or search another's items. The API hands it to each request
and the worker to each run's graph (``for_principal``): a node's ``store`` sees the same
items as its run's principal does through ``/store``. Where an app's ``auth.py`` decides
who shares what, the whole app has one tree (``shared``), as on LangGraph's server.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from outlast.store.item_backends import public_ttl

# Labels beginning with this are outlast's; a client or a graph may not use them, so the
# hidden principal label can never be forged or addressed from inside a namespace tree.
RESERVED = "outlast~"
_PRINCIPAL = RESERVED + "p~"

# Filter operators both of LangGraph's stores understand, and the filter keys the SQLite
# one accepts (it splices them into a JSON path); the API refuses anything else up front,
# so a bad filter is the same 422 on both backends instead of a 500 from one of them.
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def principal_label(principal: str) -> str:
    """The hidden first label of a principal's namespaces. The principal is escaped so any
    name makes a valid label (no ``.``, no NUL) and two principals never share one."""
    escaped = principal.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")
    return _PRINCIPAL + escaped


def check_labels(namespace: Sequence[str]) -> tuple[str, ...]:
    """LangGraph's label rules (strings, non-empty, no ``.`` or NUL) and outlast's one:
    no label may claim the reserved prefix. Raises ``InvalidNamespaceError``."""
    labels = tuple(namespace)
    for label in labels:
        if isinstance(label, str) and label.startswith(RESERVED):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r}: labels beginning with {RESERVED!r} "
                "are reserved"
            )
    validate_op_namespace(GetOp(labels, ""))
    return labels


def check_filter(filter: dict[str, Any] | None) -> None:
    """Raises ``ValueError`` for a filter LangGraph's stores would reject (or one of them
    would read differently): unknown operators, keys outside ``[A-Za-z0-9_.-]``."""
    for key, value in (filter or {}).items():
        if not FILTER_KEY.match(key):
            raise ValueError(f"invalid filter key {key!r}: letters, digits, '_', '.' and '-' only")
        if isinstance(value, dict):
            unknown = sorted(set(value) - OPERATORS)
            if unknown or not value:
                raise ValueError(
                    f"filter {key!r}: unsupported operator(s) {unknown or '{}'}; "
                    f"use one of {', '.join(sorted(OPERATORS))}"
                )


class PrincipalStore(BaseStore):
    """One principal's view of the shared item store. Everything goes through
    ``batch``/``abatch`` (``BaseStore``'s methods build the ops and validate them), so
    there is no path around the rewrite."""

    def __init__(self, items: BaseStore, principal: str) -> None:
        self.items = items
        self.principal = principal
        self.label = principal_label(principal)
        # AsyncSqliteStore handles TTLs but reports supports_ttl=False (BaseStore's flag
        # comes first in its MRO); a store given a TTL configuration handles them. The
        # TTL configuration is the deployment's (default_ttl, refresh_on_read): BaseStore
        # resolves a put without ``ttl`` and a read without ``refresh_ttl`` with it.
        self.supports_ttl, self.ttl_config = public_ttl(items)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        given = list(ops)
        results = self.items.batch([self._inward(op) for op in given])
        return [self._outward(op, r) for op, r in zip(given, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        given = list(ops)
        results = await self.items.abatch([self._inward(op) for op in given])
        return [self._outward(op, r) for op, r in zip(given, results, strict=True)]

    def _inward(self, op: Op) -> Op:
        # Every op is checked before any is sent: a batch with one bad op writes nothing.
        if isinstance(op, GetOp):
            return op._replace(namespace=(self.label, *check_labels(op.namespace)))
        if isinstance(op, PutOp):
            namespace = check_labels(op.namespace)
            if op.value is not None and not namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.value is not None and namespace[0] == "langgraph":
                raise InvalidNamespaceError('Root label for namespace cannot be "langgraph".')
            return op._replace(namespace=(self.label, *namespace))
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=(self.label, *check_labels(op.namespace_prefix)))
        if isinstance(op, ListNamespacesOp):
            return self._list_inward(op)
        raise TypeError(f"unknown store op {type(op).__name__}")

    def _list_inward(self, op: ListNamespacesOp) -> ListNamespacesOp:
        conditions: list[MatchCondition] = []
        prefixed = False
        for c in op.match_conditions or ():
            check_labels([label for label in c.path if label != "*"])
            path = tuple(c.path)
            if c.match_type == "prefix":
                path, prefixed = (self.label, *path), True
            conditions.append(MatchCondition(c.match_type, path))
        if not prefixed:
            conditions.insert(0, MatchCondition("prefix", (self.label,)))
        # A suffix starting with "*" could match the hidden label itself, on a namespace
        # one label shorter than the client asked for: a (same-principal) oddity we accept.
        depth = None if op.max_depth is None else op.max_depth + 1
        return op._replace(match_conditions=tuple(conditions), max_depth=depth)

    def _outward(self, op: Op, result: Result) -> Result:
        if isinstance(op, GetOp):
            assert result is None or isinstance(result, Item)
            return None if result is None else self._item(result)
        if isinstance(op, SearchOp):
            assert isinstance(result, list)
            return [self._found(item) for item in result]
        if isinstance(op, ListNamespacesOp):
            assert isinstance(result, list)
            return [self._strip(ns) for ns in result]
        return result

    def _strip(self, namespace: Any) -> tuple[str, ...]:
        ns = tuple(namespace)
        if not ns or ns[0] != self.label:
            # Never hand out an item of another tree, even if a query went wrong.
            raise RuntimeError(f"the item store returned a namespace outside {self.label!r}")
        return ns[1:]

    def _item(self, item: Item) -> Item:
        return Item(
            namespace=self._strip(item.namespace),
            key=item.key,
            value=item.value,
            created_at=_utc(item.created_at),
            updated_at=_utc(item.updated_at),
        )

    def _found(self, item: Any) -> SearchItem:
        return SearchItem(
            self._strip(item.namespace),
            item.key,
            item.value,
            _utc(item.created_at),
            _utc(item.updated_at),
            getattr(item, "score", None),
        )


def _utc(when: dt.datetime) -> dt.datetime:
    # SQLite's CURRENT_TIMESTAMP is UTC without an offset; say so, as Postgres does.
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when


def for_principal(items: BaseStore, principal: str, *, shared: bool = False) -> BaseStore:
    """The store a request or a run of ``principal`` sees: its own tree; or, where an
    app's ``auth.py`` decides (``shared``), the app's one tree, as on LangGraph's server,
    where the ``@auth.on.store`` handlers say who reads and writes which namespace (an
    admin reading every user's, say). That tree is the one the empty principal has
    without keys, so a deployment that adds an ``auth.py`` keeps what it stored."""
    return PrincipalStore(items, "" if shared else principal)
