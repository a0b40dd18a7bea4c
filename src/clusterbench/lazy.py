"""Package names imported when first used (PEP 562): a package whose __init__ re-exports its
modules' names loads none of them until one is asked for, so importing one small module of it
(say the histogram) does not bring in the rest, and the command line starts faster."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, where: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module-level __getattr__ of `package`: `where` maps each name to its module; a name
    once imported is kept in the package's `namespace`."""

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name]), name)
        namespace[name] = value
        return value

    return getattr_
