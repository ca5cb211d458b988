"""Every public sync method of a store and a memory tier has an async twin with the same parameters.

Within one class the twin of ``m`` is ``a<m>`` (``get``/``aget``, ``iter_items``/``aiter_items``).
Lifecycle methods follow the official stores instead: the async store's ``setup``,
``sweep_ttl``, the sweeper controls and ``from_conn_string`` keep the sync store's name and are
async there; ``close`` pairs with ``aclose``. The LangChain views (``as_retriever``,
``as_byte_store``) are built without I/O and carry both kinds of method themselves, so they have
no ``a``-twin: the same method on both stores.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from langmem_adapters.memory import EpisodicMemory, ProceduralMemory, SemanticMemory, WorkingMemory
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import AsyncRedisStore, RedisStore

STORES = [(PostgresStore, AsyncPostgresStore), (RedisStore, AsyncRedisStore)]
TIERS = [SemanticMemory, EpisodicMemory, ProceduralMemory, WorkingMemory]
SAME_NAME = {"setup", "sweep_ttl", "start_ttl_sweeper", "stop_ttl_sweeper", "from_conn_string"}
RENAMED = {"close": "aclose"}
PURE = {"to_context"}  # formatting only: no I/O, nothing to await
VIEWS = {"as_retriever", "as_byte_store"}  # a wrapper built without I/O, sync and async inside


def _is_async(func: Any) -> bool:
    func = inspect.unwrap(func)
    return inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)


def _methods(cls: type) -> dict[str, Any]:
    """Public callables of ``cls`` (properties and data excluded)."""
    out = {}
    for name in dir(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        value = getattr(cls, name)
        if callable(value):
            out[name] = value
    return out


def _parameters(func: Any) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults, without ``self``/``cls``."""
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return [(p.name, p.kind, p.default) for p in params]


def _sync_names(methods: dict[str, Any]) -> list[str]:
    """Methods that are not themselves the ``a``-twin of another method."""
    return [
        name
        for name in methods
        if not (name.startswith("a") and name[1:] in methods) and name not in PURE
    ]


def _check_in_class(cls: type, skip: set[str]) -> None:
    methods = _methods(cls)
    for name in _sync_names(methods):
        if name in skip:
            continue
        twin = "a" + name
        assert twin in methods, f"{cls.__name__}.{name} has no async twin {twin}"
        assert _is_async(methods[twin]), f"{cls.__name__}.{twin} is not async"
        assert _parameters(methods[name]) == _parameters(methods[twin]), (
            f"{cls.__name__}.{name} and {twin} take different parameters"
        )


@pytest.mark.parametrize("sync_cls, async_cls", STORES, ids=lambda c: c.__name__)
def test_store_methods_have_async_twins(sync_cls: type, async_cls: type) -> None:
    lifecycle = SAME_NAME | set(RENAMED) | set(RENAMED.values())
    _check_in_class(sync_cls, lifecycle | VIEWS)
    _check_in_class(async_cls, lifecycle | VIEWS)
    sync_methods, async_methods = _methods(sync_cls), _methods(async_cls)
    for name in VIEWS:
        assert name in sync_methods and name in async_methods, name
        assert not _is_async(sync_methods[name]) and not _is_async(async_methods[name]), name
        assert _parameters(sync_methods[name]) == _parameters(async_methods[name]), name
    for name in SAME_NAME:
        assert name in sync_methods and name in async_methods, name
        assert not _is_async(sync_methods[name]), f"{sync_cls.__name__}.{name} is async"
        if name != "from_conn_string":  # an (async) context manager on both
            assert _is_async(async_methods[name]), f"{async_cls.__name__}.{name} is not async"
        assert _parameters(sync_methods[name]) == _parameters(async_methods[name]), name
    for name, twin in RENAMED.items():
        if name in sync_methods or twin in async_methods:
            assert name in sync_methods and twin in async_methods, (name, twin)
            assert _parameters(sync_methods[name]) == _parameters(async_methods[twin]), name


def test_store_twins_cover_the_new_surface() -> None:
    """The check above is not vacuous: it sees the export/restore pair and the batch pair."""
    for sync_cls, async_cls in STORES:
        for cls in (sync_cls, async_cls):
            names = _methods(cls)
            for name in ("batch", "iter_items", "restore", "put_if_absent"):
                assert name in names and "a" + name in names, (cls.__name__, name)


@pytest.mark.parametrize("tier", TIERS, ids=lambda c: c.__name__)
def test_tier_methods_have_async_twins(tier: type) -> None:
    assert len(_sync_names(_methods(tier))) >= 3
    _check_in_class(tier, set())
