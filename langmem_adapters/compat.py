"""Old import paths of names that moved to one canonical place, kept importable for a while.

A package lists its moved names and gets a module ``__getattr__`` that returns each from its new
home with a ``DeprecationWarning`` naming it (the names are in no ``__all__``, so star imports and
``dir()`` show only the package's own API). See ``docs/architecture.md`` (public API).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved"]


def moved(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` for names that now live elsewhere: ``homes`` maps
    each name to the module that defines (or canonically re-exports) it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        warnings.warn(
            f"{package}.{name} moved: import it from {home}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__
