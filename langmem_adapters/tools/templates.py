"""Namespace templates: a namespace whose labels hold ``{name}`` fields filled on every tool call
from the LangGraph runtime context, then from ``config["configurable"]``."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidNamespaceError,
    MemoryTypeError,
    NamespaceTemplateError,
)
from langmem_adapters.memory.checks import validate_root

__all__ = ["NamespaceTemplate"]


class NamespaceTemplate:
    """A namespace whose labels may contain ``{name}`` fields filled per call."""

    def __init__(self, namespace: Sequence[str] | str) -> None:
        labels = (namespace,) if isinstance(namespace, str) else tuple(namespace)
        if not labels or not all(isinstance(label, str) for label in labels):
            raise InvalidArgumentTypeError(
                f"namespace must be a non-empty tuple of strings such as ('memories', '{{user_id}}'), "
                f"got {namespace!r}"
            )
        names: list[str] = []
        for label in labels:
            for _, name, _, _ in string.Formatter().parse(label):
                if name is None:
                    continue
                if not name.isidentifier():
                    raise InvalidArgumentError(
                        f"namespace template field {{{name}}} in {label!r} must be a plain name "
                        "such as {user_id}"
                    )
                if name not in names:
                    names.append(name)
        self.labels = labels
        self.names = tuple(names)
        if not names:
            validate_root(labels)

    def fill(self, context: Any, configurable: Mapping[str, Any]) -> tuple[str, ...]:
        """The namespace with every field taken from ``context``, else from ``configurable``."""
        if not self.names:
            return self.labels
        values: dict[str, str] = {}
        for name in self.names:
            value = _context_value(context, name)
            if value is None:
                value = configurable.get(name)
            if value is None:
                raise NamespaceTemplateError(
                    f"namespace template {self.labels!r} needs {name!r}: pass it in the run's "
                    f"context (invoke(..., context={{{name!r}: ...}})) or in "
                    f"config['configurable'][{name!r}]; context has {_public_keys(context)}, "
                    f"configurable has {_public_keys(configurable)}"
                )
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise NamespaceTemplateError(
                    f"namespace template value {name!r} must be a string or an integer, "
                    f"got {type(value).__name__}"
                )
            values[name] = str(value)
        root = tuple(label.format_map(values) for label in self.labels)
        try:
            return validate_root(root)
        except (InvalidNamespaceError, MemoryTypeError) as exc:
            raise NamespaceTemplateError(
                f"namespace {root!r} filled from template {self.labels!r} is invalid: {exc}"
            ) from exc


def _context_value(context: Any, name: str) -> Any:
    """``name`` of a mapping or attribute-style context (``None`` when absent)."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def _public_keys(source: Any) -> list[str]:
    """The keys a context or configurable offers, for the error message of a missing field."""
    if source is None:
        return []
    keys = (
        source.keys()
        if isinstance(source, Mapping)
        else vars(source)
        if hasattr(source, "__dict__")
        else []
    )
    return sorted(str(k) for k in keys if not str(k).startswith("__"))
