"""The one reader of ``module:attr`` names (a probe, a compensation, a credential provider,
a graph in an importable module): what the user wrote in a wait, a decorator or a setting,
turned into the object it names.

``pkgutil.resolve_name`` does the work (``module:qualname``, dotted attributes, and the
colon-less ``package.module.attr`` form too); this adds one error type, so that every caller
says the same thing about a name that does not resolve, whatever went wrong underneath.
"""

from __future__ import annotations

import pkgutil
from typing import Any


class Unresolvable(ImportError):
    """A ``module:attr`` name that names nothing: a malformed name, a module that cannot be
    imported, or an attribute the module does not have."""


def resolve(name: str) -> Any:
    """The object ``name`` (``module:attr.sub``) names."""
    try:
        return pkgutil.resolve_name(name)
    except Exception as exc:  # a module that raises as it is imported names nothing either
        raise Unresolvable(f"cannot resolve {name!r}: {type(exc).__name__}: {exc}") from exc
