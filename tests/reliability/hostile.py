"""What the hostile-input tests share: the sentinel tenant whose data must never leak or change,
the store states they compare, stores filled for them, and counts beyond every backend's range."""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore, PutOp

from tests.stores import AsyncStoreFactory, StoreFactory, hash_index

SENTINEL = ("victim", "tenant")


def store_state(store: BaseStore) -> list[tuple[Any, ...]]:
    """Every item of the store, to compare before and after a refused request."""
    return sorted((i.namespace, i.key, repr(i.value)) for i in store.search((), limit=100_000))


# Beyond a PostgreSQL bigint, beyond 64 bits, beyond the Query Engine's 1,000,000-row window.
HUGE = [1_000_001, 2_000_000, 2**31, 2**40, 2**40 + 1, 2**63 - 1, 2**63, 2**64, 10**30]


def populated_store(make_store: StoreFactory) -> BaseStore:
    """Twelve items in two namespaces under ``("fuzz",)`` (and the sentinel), with a vector index."""
    store = make_store(index=hash_index(fields=["text"]))
    fill(store.batch)
    return store


async def indexed_astore(make_astore: AsyncStoreFactory, hybrid: bool = False) -> BaseStore:
    """An empty async store of the backend with a vector index on ``text`` (and hybrid search)."""
    return await make_astore(index=hash_index(fields=["text"], hybrid=hybrid))


def fill(batch: Any) -> Any:
    """Put the sentinel and twelve items under ``("fuzz",)`` through ``batch`` (or ``abatch``)."""
    return batch(
        [PutOp(SENTINEL, "secret", {"text": "secret", "kind": "fact"})]
        + [
            PutOp(
                ("fuzz", ns),
                f"k{i}",
                {"text": f"note {i} about {ns}", "kind": "fact" if i % 2 else "x"},
            )
            for ns in ("a", "b")
            for i in range(6)
        ]
    )
