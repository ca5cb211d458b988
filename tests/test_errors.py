"""One error hierarchy: every error class of the package has the root ``LangmemAdaptersError``, keeps
its standard base, and is importable from ``langmem_adapters`` and from where its raiser lives."""

from __future__ import annotations

import importlib
import inspect

import pytest
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
from langgraph.store.memory import InMemoryStore

import langmem_adapters
from langmem_adapters import errors
from langmem_adapters.errors import LangmemAdaptersError

ERRORS = [
    obj
    for _, obj in inspect.getmembers(errors, inspect.isclass)
    if issubclass(obj, BaseException) and obj.__module__ == errors.__name__
]

STORE_ERRORS = [
    "EmbeddingDimensionError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "NonJSONValueError",
    "ServerRefusedError",
    "StoreConnectionError",
    "StoreError",
    "TransientServerError",
    "UnsupportedServerError",
    "WrongLoopError",
]
RAISERS = {
    "langmem_adapters.postgres": [*STORE_ERRORS, "MissingExtraError"],
    "langmem_adapters.redis": STORE_ERRORS,
    "langmem_adapters.memory": [
        "ConcurrentWriteError",
        "InvalidMemoryQueryError",
        "InvalidMemoryWriteError",
        "MemoryTypeError",
        "RecordNotFoundError",
    ],
    "langmem_adapters.tools": ["MemoryToolConfigError", "NamespaceTemplateError"],
    "langmem_adapters.cli": ["CLIError"],
    "langmem_adapters.transfer": ["InvalidRecordError"],
    "langmem_adapters.server": ["ServerConfigError"],
}


def test_every_error_has_the_root_and_a_standard_base() -> None:
    assert len(ERRORS) >= 15
    for cls in ERRORS:
        assert issubclass(cls, LangmemAdaptersError), cls
        if cls is not LangmemAdaptersError:
            assert cls.__mro__[1:] != (LangmemAdaptersError, Exception, BaseException) or cls in (
                errors.StoreError,
                errors.CLIError,
            ), f"{cls.__name__} has no standard base (ValueError, TypeError...)"


def test_every_error_is_importable_from_the_package_root() -> None:
    for cls in ERRORS:
        assert getattr(langmem_adapters, cls.__name__) is cls
        assert cls.__name__ in langmem_adapters.__all__


@pytest.mark.parametrize("module", sorted(RAISERS))
def test_errors_are_importable_where_they_are_raised(module: str) -> None:
    mod = importlib.import_module(module)
    for name in RAISERS[module]:
        assert getattr(mod, name) is getattr(errors, name), f"{module}.{name}"


def test_namespace_errors_are_ours_and_langgraphs() -> None:
    assert issubclass(errors.InvalidNamespaceError, LangGraphNamespaceError)
    from langmem_adapters.memory import SemanticMemory

    with pytest.raises(LangmemAdaptersError):
        SemanticMemory(InMemoryStore(), namespace=())
