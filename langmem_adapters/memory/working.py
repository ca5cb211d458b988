"""WorkingMemory: keyed scratch values for one run or thread, expiring after a TTL.

Values live under ``(*root, "working")`` with the key ``f"{digest(run_id)}:{digest(key)}"`` (so any
run id and key string is safe) and are never indexed. Every value stores its own
``expires_at_ms`` and reads hide expired values, so expiry behaves the same on every store: a
value expires ``ttl`` minutes after its last ``set``. Stores with TTL support
(``store.supports_ttl``) also get the TTL and reclaim the space themselves; on other stores
expired values stay in the store, invisible, until ``clear()`` removes them.

    >>> scratch = WorkingMemory(store, namespace=("acme", "user-42"), run_id="run-7")
    >>> scratch.set("plan", ["look up order", "refund"])
    >>> scratch.get("plan")
    ['look up order', 'refund']
    >>> scratch.clear()
    1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import NOT_PROVIDED, BaseStore, Item, NotProvided, SearchItem

from langmem_adapters.errors import InvalidMemoryWriteError, MemoryTypeError
from langmem_adapters.memory.checks import check_json
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.memory.tier import MemoryTier, digest, search_all
from langmem_adapters.memory.times import utc_now

__all__ = ["WorkingMemory"]


def _check_ttl(ttl: object) -> float | None:
    if ttl is None:
        return None
    if not isinstance(ttl, (int, float)) or isinstance(ttl, bool):
        raise MemoryTypeError(f"ttl must be a number of minutes or None, got {type(ttl).__name__}")
    if not ttl > 0:
        raise InvalidMemoryWriteError(f"ttl must be positive (minutes), got {ttl!r}")
    return float(ttl)


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise MemoryTypeError(f"key must be a str, got {type(key).__name__}")
    return str(check_json(key, "key"))


class WorkingMemory(MemoryTier):
    """Scratch values of one run under ``(*namespace, "working")``; see the module docstring.

    ``ttl`` is in minutes, like ``BaseStore.put``; ``None`` keeps values until ``clear()``.
    """

    _label = "working"

    def __init__(
        self,
        store: BaseStore,
        *,
        namespace: Sequence[str],
        run_id: str,
        ttl: float | None = 60.0,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        super().__init__(store, namespace=namespace, clock=clock)
        if not isinstance(run_id, str) or not run_id:
            raise MemoryTypeError(f"run_id must be a non-empty str, got {run_id!r}")
        self.run_id = str(check_json(run_id, "run_id"))
        self.ttl = _check_ttl(ttl)

    def _key(self, key: str) -> str:
        return f"{digest(self.run_id)}:{digest(key)}"

    def _live(self, item: Item | None, now: int) -> bool:
        if item is None or tuple(item.namespace) != self._ns:
            return False
        value = item.value
        expires = value.get("expires_at_ms")
        return (
            value.get("kind") == "working"
            and value.get("run_id") == self.run_id
            and (expires is None or expires > now)
        )

    def _set(self, key: str, value: Any, ttl: float | NotProvided | None) -> Flow[None]:
        key = _check_key(key)
        minutes = self.ttl if isinstance(ttl, NotProvided) else _check_ttl(ttl)
        now = self._now_ms()
        record = {
            "kind": "working",
            "run_id": self.run_id,
            "key": key,
            "value": check_json(value, f"value of {key!r}"),
            "updated_at_ms": now,
            "expires_at_ms": None if minutes is None else now + round(minutes * 60_000),
        }
        if self.store.supports_ttl:
            yield from call(self.store, "put", self._ns, self._key(key), record, False, ttl=minutes)
        else:
            yield from call(self.store, "put", self._ns, self._key(key), record, False)

    def _get(self, key: str, default: Any) -> Flow[Any]:
        item = yield from call(self.store, "get", self._ns, self._key(_check_key(key)))
        if not self._live(item, self._now_ms()) or item.value.get("key") != key:
            return default
        return item.value["value"]

    def _run_items(self) -> Flow[list[SearchItem]]:
        return (yield from search_all(self.store, self._ns, filter={"run_id": self.run_id}))

    def _items(self) -> Flow[dict[str, Any]]:
        items = yield from self._run_items()
        now = self._now_ms()
        return {i.value["key"]: i.value["value"] for i in items if self._live(i, now)}

    def _clear(self) -> Flow[int]:
        items = yield from self._run_items()
        mine = [i for i in items if i.value.get("run_id") == self.run_id]
        for item in mine:
            yield from call(self.store, "delete", self._ns, item.key)
        return len(mine)

    # ------------------------------------------------------------------ public API

    def set(self, key: str, value: Any, *, ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """Store a JSON value under ``key`` for this run; ``ttl`` overrides the tier's default."""
        run_flow(self._set(key, value, ttl))

    async def aset(
        self, key: str, value: Any, *, ttl: float | NotProvided | None = NOT_PROVIDED
    ) -> None:
        """Async ``set``."""
        await arun_flow(self._set(key, value, ttl))

    def get(self, key: str, default: Any = None) -> Any:
        """The live value of ``key`` in this run, or ``default`` if absent or expired."""
        return run_flow(self._get(key, default))

    async def aget(self, key: str, default: Any = None) -> Any:
        """Async ``get``."""
        return await arun_flow(self._get(key, default))

    def items(self) -> dict[str, Any]:
        """All live values of this run, by key."""
        return run_flow(self._items())

    async def aitems(self) -> dict[str, Any]:
        """Async ``items``."""
        return await arun_flow(self._items())

    def clear(self) -> int:
        """Delete every value of this run, expired ones included; returns how many were removed."""
        return run_flow(self._clear())

    async def aclear(self) -> int:
        """Async ``clear``."""
        return await arun_flow(self._clear())
