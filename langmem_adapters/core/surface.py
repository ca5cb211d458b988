"""langgraph's ``BaseStore`` convenience methods (``search``, ``put``, ``delete``,
``list_namespaces`` and their async twins), raising this package's errors (``get`` is the store's
own, see :meth:`~langmem_adapters.core.store.Store.get`).

langgraph checks namespace labels in those methods before a batch reaches the store, raising its own
``InvalidNamespaceError``; here that becomes this package's (a subclass of it), so ``except
LangmemAdaptersError`` catches every refusal of bad input, as it does for batches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from langgraph.store.base import BaseStore
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError

from langmem_adapters.errors import InvalidNamespaceError, LangmemAdaptersError

__all__ = ["OwnErrors"]

P = ParamSpec("P")
R = TypeVar("R")


def _ours(exc: LangGraphNamespaceError) -> Exception:
    return exc if isinstance(exc, LangmemAdaptersError) else InvalidNamespaceError(str(exc))


def _sync(method: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except LangGraphNamespaceError as exc:
            raise _ours(exc) from None

    return call


def _async(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except LangGraphNamespaceError as exc:
            raise _ours(exc) from None

    return call


class OwnErrors(BaseStore):
    """``BaseStore`` whose convenience methods raise this package's ``InvalidNamespaceError``."""

    search = _sync(BaseStore.search)
    put = _sync(BaseStore.put)
    delete = _sync(BaseStore.delete)
    list_namespaces = _sync(BaseStore.list_namespaces)
    asearch = _async(BaseStore.asearch)
    aput = _async(BaseStore.aput)
    adelete = _async(BaseStore.adelete)
    alist_namespaces = _async(BaseStore.alist_namespaces)
