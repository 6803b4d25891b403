"""Turn graph state and stream payloads into plain JSON values.

Graph state may hold LangChain messages, pydantic models, dataclasses, tuples or sets;
events and results are stored as JSON, so everything goes through here once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Mapping
from typing import Any

JSON = Any


def to_jsonable(value: Any, _depth: int = 0) -> JSON:
    """A plain JSON value for ``value``. What has no JSON form becomes its ``repr``, and
    so does anything nested deeper than 64 levels: a cycle must not recurse forever."""
    if _depth > 64:
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, _depth + 1) for v in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, _depth + 1)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        try:
            return to_jsonable(model_dump(mode="json"), _depth + 1)
        except Exception:
            return to_jsonable(model_dump(), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)
