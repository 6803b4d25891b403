"""Mission budgets: limits that open a checkpoint instead of cutting the run off.

Each dimension has a soft limit and a hard cap. Reaching a soft limit stops the run at the
next step boundary and opens a budget checkpoint: a ``budget`` wait where a person grants
a tranche (never past the hard cap) or closes the run with the best result it has.
Reaching a hard cap stops the run at the next step boundary with that best result
(``completed``, ``partial: true``). Limits live in the run row; nothing a graph does can
change them, and the caps an operator configures bound what a request may ask for.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from outlast.errors import OutlastError

DIMENSIONS = {
    "steps": "node executions",
    "tool_calls": "tool calls requested by the model",
    "tokens": "model tokens (input + output)",
    "cost": "model cost in USD, from usage metadata and the price table",
    "wall_time": "seconds spent running (waiting does not count)",
    "parallel_branches": "nodes in flight at once",
}


class BudgetInvalid(OutlastError):
    status = 422
    title = "Invalid budget"


Limits = dict[str, dict[str, float | None]]


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BudgetInvalid(f"{where} must be a finite number")
    if value < 0:
        raise BudgetInvalid(f"{where} must not be negative")
    return float(value)


def resolve_budget(
    requested: dict[str, Any] | None, defaults: dict[str, Any], caps: dict[str, Any]
) -> Limits | None:
    """Defaults, overridden by the request, bounded by the operator's caps."""
    unknown = sorted(set(requested or {}) - set(DIMENSIONS))
    if unknown:
        raise BudgetInvalid(f"unknown budget dimensions {unknown}; known: {sorted(DIMENSIONS)}")
    limits: Limits = {}
    for dim in DIMENSIONS:
        asked = (requested or {}).get(dim)
        if asked is not None and not isinstance(asked, dict):
            raise BudgetInvalid(f"budget.{dim} must be an object {{soft, hard}}")
        merged = {**(defaults.get(dim) or {}), **(asked or {})}
        extra = sorted(set(merged) - {"soft", "hard"})
        if extra:
            raise BudgetInvalid(f"budget.{dim}: unknown fields {extra}; use soft and hard")
        soft = _number(merged.get("soft"), f"budget.{dim}.soft")
        hard = _number(merged.get("hard"), f"budget.{dim}.hard")
        cap = _number((caps.get(dim) or {}).get("hard"), f"operator cap {dim}")
        if cap is not None:
            if hard is not None and hard > cap:
                raise BudgetInvalid(f"budget.{dim}.hard {hard:g} exceeds the operator cap {cap:g}")
            hard = cap if hard is None else hard
        if soft is not None and hard is not None and soft > hard:
            raise BudgetInvalid(f"budget.{dim}: soft {soft:g} is above hard {hard:g}")
        if soft is not None or hard is not None:
            limits[dim] = {"soft": soft, "hard": hard}
    return limits or None


@dataclass(frozen=True, slots=True)
class Breach:
    level: str  # "soft" | "hard"
    dimension: str
    used: float
    limit: float

    def describe(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "dimension": self.dimension,
            "used": self.used,
            "limit": self.limit,
        }


class BudgetMeter:
    """Counts usage from the stream; says when a limit is reached."""

    def __init__(
        self,
        limits: Limits | None,
        usage: dict[str, Any] | None,
        prices: dict[str, dict[str, float]],
    ) -> None:
        self.limits = limits or {}
        self._prices = prices
        base = usage or {}
        # Only the dimensions: whatever else a stored usage holds (``partial``) is not
        # counted, and ``usage()`` never shows it.
        self.used = {dim: float(base.get(dim, 0.0)) for dim in DIMENSIONS}
        self._wall_base = self.used["wall_time"]
        self._t0 = time.monotonic()
        self._in_flight = 0

    def on_part(self, part: dict[str, Any]) -> None:
        kind, data = part.get("type"), part.get("data")
        if kind == "tasks" and isinstance(data, dict):
            if "input" in data:
                self.used["steps"] += 1
                self._in_flight += 1
                self.used["parallel_branches"] = max(
                    self.used["parallel_branches"], float(self._in_flight)
                )
            else:
                self._in_flight = max(0, self._in_flight - 1)
        elif kind == "updates" and isinstance(data, dict):
            for update in data.values():
                for message in _messages(update):
                    self._count(message)

    def _count(self, message: AIMessage) -> None:
        self.used["tool_calls"] += len(message.tool_calls or [])
        meta: dict[str, Any] = dict(message.usage_metadata or {})
        tokens_in, tokens_out = meta.get("input_tokens", 0), meta.get("output_tokens", 0)
        self.used["tokens"] += float(meta.get("total_tokens", tokens_in + tokens_out))
        model = str((message.response_metadata or {}).get("model_name", ""))
        price = self._prices.get(model)
        if price:
            self.used["cost"] += (
                tokens_in * price.get("input", 0.0) + tokens_out * price.get("output", 0.0)
            ) / 1_000_000

    def usage(self) -> dict[str, Any]:
        self.used["wall_time"] = self._wall_base + (time.monotonic() - self._t0)
        return {dim: round(value, 6) for dim, value in self.used.items()}

    def breach(self) -> Breach | None:
        usage = self.usage()
        for level in ("hard", "soft"):
            for dim, limit in self.limits.items():
                value = limit.get(level)
                if value is not None and usage[dim] >= value:
                    return Breach(level, dim, usage[dim], value)
        return None


def with_soft(limits: Limits, dimension: str, soft: float) -> Limits:
    """A copy of ``limits`` with one soft limit moved (the limits of a run are its own)."""
    moved = {dim: dict(limit) for dim, limit in limits.items()}
    moved[dimension]["soft"] = soft
    return moved


def granted(limits: Limits, dimension: str, tranche: float) -> Limits:
    """The limits after a person's tranche: the soft limit rises by it, never past the cap."""
    soft, hard = limits[dimension].get("soft"), limits[dimension].get("hard")
    raised = float(soft or 0) + float(tranche)
    return with_soft(limits, dimension, raised if hard is None else min(raised, hard))


def _messages(update: Any) -> list[AIMessage]:
    found = update.get("messages") if isinstance(update, dict) else None
    if isinstance(found, AIMessage):
        return [found]
    if isinstance(found, list):
        return [m for m in found if isinstance(m, AIMessage)]
    return []


def tranche_schema(limit: dict[str, float | None], dimension: str) -> dict[str, Any]:
    """The answer a person gives at a budget checkpoint: continue (with a tranche that
    cannot pass the hard cap) or close with the best result."""
    tranche: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0}
    soft, hard = limit.get("soft"), limit.get("hard")
    if soft is not None and hard is not None:
        tranche["maximum"] = hard - soft
    return {
        "type": "object",
        "properties": {"action": {"enum": ["continue", "close"]}, "tranche": tranche},
        "required": ["action"],
        "additionalProperties": False,
        "if": {"properties": {"action": {"const": "continue"}}},
        "then": {"required": ["tranche"]},
        "description": f"continue with a tranche of {dimension}, or close with the best result",
    }
