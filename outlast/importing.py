"""The one reader of ``module:attr`` names (a probe, a compensation, a credential provider,
a graph in an importable module): what the user wrote in a wait, a decorator or a setting,
turned into the object it names.

``pkgutil.resolve_name`` does the work (``module:qualname``, dotted attributes, and the
colon-less ``package.module.attr`` form too); this adds one error type, so that every caller
says the same thing about a name that does not resolve, whatever went wrong underneath.
"""

from __future__ import annotations

import hashlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
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


def resolve_in(target: str, base: Path) -> Any:
    """What a ``langgraph.json`` entry names: ``path/to/file.py:attr`` (a file relative to
    ``base``, the directory of ``langgraph.json``, as LangGraph's server reads it) or an
    importable ``module:attr`` (``base`` on ``sys.path``)."""
    module_part, _, attr = target.rpartition(":")
    if not (module_part.endswith(".py") or "/" in module_part):
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
        return resolve(target)
    path = (base / module_part).resolve()
    # A stable module name (not hash(), which is salted per process): functions in it,
    # such as probes named by a wait, must resolve the same in every worker.
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    name = f"outlast_user_graph_{path.stem}_{digest}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise Unresolvable(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            # a half-run module must not stand in for the file next time
            del sys.modules[name]
            raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise Unresolvable(f"{path} has no attribute {attr!r}") from None
