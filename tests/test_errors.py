"""One error hierarchy: every error class of the package has the root ``LangmemAdaptersError``, keeps
its standard base, lives in ``langmem_adapters.errors`` and is re-exported by ``langmem_adapters``
only (the subpackages' old paths resolve with a ``DeprecationWarning``)."""

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

# The packages that used to re-export the errors their code raises: the old paths still resolve,
# with a DeprecationWarning naming the one home, langmem_adapters.errors.
OLD_PATHS = {
    "langmem_adapters.postgres": [*errors.STORE_ERRORS, "MissingExtraError"],
    "langmem_adapters.redis": list(errors.STORE_ERRORS),
    "langmem_adapters.memory": [
        "ConcurrentWriteError",
        "InvalidMemoryQueryError",
        "InvalidMemoryWriteError",
        "InvalidNamespaceError",
        "MemoryTypeError",
        "RecordNotFoundError",
    ],
    "langmem_adapters.manager": [
        "InvalidArgumentError",
        "InvalidArgumentTypeError",
        "MemoryToolConfigError",
        "NamespaceTemplateError",
    ],
    "langmem_adapters.tools": ["MemoryToolConfigError", "NamespaceTemplateError"],
    "langmem_adapters.cli": ["CLIError"],
    "langmem_adapters.transfer": ["InvalidArgumentError", "InvalidRecordError", "StoreError"],
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


def test_each_error_has_one_home_and_one_documented_re_export() -> None:
    """Defined in langmem_adapters.errors, re-exported by langmem_adapters, exported by no
    subpackage (``__all__``)."""
    import pkgutil

    for info in pkgutil.walk_packages(langmem_adapters.__path__, "langmem_adapters."):
        if info.name.endswith(".__main__"):  # runs the CLI
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # a module of an optional extra that is not installed
            continue
        exported = set(getattr(module, "__all__", ()))
        doubled = {cls.__name__ for cls in ERRORS} & exported
        assert module.__name__ == "langmem_adapters.errors" or not doubled, (info.name, doubled)


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_old_error_paths_still_resolve_with_a_deprecation_warning(module: str) -> None:
    mod = importlib.import_module(module)
    for name in OLD_PATHS[module]:
        with pytest.warns(DeprecationWarning, match="import it from langmem_adapters.errors"):
            assert getattr(mod, name) is getattr(errors, name), f"{module}.{name}"
    with pytest.raises(AttributeError):
        mod.NoSuchName  # noqa: B018


def test_namespace_errors_are_ours_and_langgraphs() -> None:
    assert issubclass(errors.InvalidNamespaceError, LangGraphNamespaceError)
    from langmem_adapters.memory import SemanticMemory

    with pytest.raises(LangmemAdaptersError):
        SemanticMemory(InMemoryStore(), namespace=())


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_survives_pickling_with_its_message(cls: type[BaseException]) -> None:
    import pickle

    error = cls("what happened")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls and str(again) == str(error)
