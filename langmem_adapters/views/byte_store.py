"""One namespace of a store as a LangChain ``ByteStore`` (``mget``/``mset``/``mdelete``/
``yield_keys`` and their async twins), e.g. the cache of ``CacheBackedEmbeddings``.

Bytes are kept base64-encoded in the item value ``{"bytes": ...}`` and never embedded. Only the
namespace itself is read: items of namespaces below it are not keys of this byte store.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator, Sequence

from langchain_core.stores import ByteStore
from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from langmem_adapters.core.ops import validate_key, validate_namespace
from langmem_adapters.errors import InvalidArgumentTypeError

__all__ = ["StoreByteStore"]

_FIELD = "bytes"
#: Items read per page by ``yield_keys``.
_PAGE = 500


def _encode(value: bytes) -> dict[str, str]:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidArgumentTypeError(f"a byte store holds bytes, got {type(value).__name__}")
    return {_FIELD: base64.b64encode(value).decode("ascii")}


def _decode(item: Item | None) -> bytes | None:
    if item is None:
        return None
    text = item.value.get(_FIELD)
    return None if not isinstance(text, str) else base64.b64decode(text)


class StoreByteStore(ByteStore):
    """The items of one namespace of ``store`` as a ``ByteStore``; ``ttl`` (minutes) applies to
    every ``mset`` when given, on stores with TTL support."""

    def __init__(
        self, store: BaseStore, namespace: tuple[str, ...], *, ttl: float | None = None
    ) -> None:
        self.store = store
        self.namespace = validate_namespace(namespace)
        self.ttl = ttl

    def _gets(self, keys: Sequence[str]) -> list[GetOp]:
        return [GetOp(self.namespace, validate_key(key)) for key in keys]

    def _puts(self, pairs: Sequence[tuple[str, bytes | None]]) -> list[PutOp]:
        return [
            PutOp(
                self.namespace,
                validate_key(key),
                None if value is None else _encode(value),
                index=False,
                ttl=self.ttl,
            )
            for key, value in pairs
        ]

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        """The bytes of each key (``None`` for a missing one), read in one batch."""
        ops = self._gets(keys)
        return [_decode(item) for item in self.store.batch(ops)] if ops else []  # type: ignore[arg-type]

    async def amget(self, keys: Sequence[str]) -> list[bytes | None]:
        """Async twin of :meth:`mget`."""
        ops = self._gets(keys)
        return [_decode(item) for item in await self.store.abatch(ops)] if ops else []  # type: ignore[arg-type]

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Write every pair in one atomic batch (all checked before anything is written)."""
        ops = self._puts(list(key_value_pairs))
        if ops:
            self.store.batch(ops)

    async def amset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Async twin of :meth:`mset`."""
        ops = self._puts(list(key_value_pairs))
        if ops:
            await self.store.abatch(ops)

    def mdelete(self, keys: Sequence[str]) -> None:
        """Delete the keys (missing ones are ignored) in one batch."""
        ops = self._puts([(key, None) for key in keys])
        if ops:
            self.store.batch(ops)

    async def amdelete(self, keys: Sequence[str]) -> None:
        """Async twin of :meth:`mdelete`."""
        ops = self._puts([(key, None) for key in keys])
        if ops:
            await self.store.abatch(ops)

    def _page(self, items: Sequence[Item], prefix: str | None) -> list[str]:
        return [
            item.key
            for item in items
            if item.namespace == self.namespace and (prefix is None or item.key.startswith(prefix))
        ]

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        """Every key of the namespace (those starting with ``prefix`` when given), in pages."""
        offset = 0
        while True:
            page = self.store.search(self.namespace, limit=_PAGE, offset=offset)
            yield from self._page(page, prefix)
            if len(page) < _PAGE:
                return
            offset += len(page)

    async def ayield_keys(self, *, prefix: str | None = None) -> AsyncIterator[str]:
        """Async twin of :meth:`yield_keys`."""
        offset = 0
        while True:
            page = await self.store.asearch(self.namespace, limit=_PAGE, offset=offset)
            for key in self._page(page, prefix):
                yield key
            if len(page) < _PAGE:
                return
            offset += len(page)
