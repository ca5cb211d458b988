"""The stores of the retrieval benchmark (``bench_retrieval.py``): each mode's index option, our
stores and the official ones on their servers, what follows a load, and the vector search setting
every mode of one loaded table or prefix shares (see that benchmark's docstring for why)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import psycopg
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore
from psycopg.conninfo import make_conninfo

from benchmarks.bench_postgres import resolve_dsn
from benchmarks.bench_redis import resolve_url
from langmem_adapters.core.hybrid import FUSIONS

__all__ = [
    "BACKENDS",
    "DIMS",
    "MODES",
    "analyze",
    "fixed_search",
    "hybrid_option",
    "index",
    "postgres_store",
    "redis_store",
]

DIMS = 256
#: Our store's index option per mode (``None``: vector only); "official" is langgraph's store.
MODES: dict[str, Any] = {
    "vector": None,
    "lexical": {"vector_weight": 0},
    "hybrid": True,
    "official": None,
}
SCHEMA = "bench_retrieval"


def hybrid_option(mode: str) -> Any:
    """The ``hybrid`` index option of ``mode``: one of ``MODES``, ``hybrid:<w>`` for hybrid with
    ``lexical_weight`` ``w`` (to see how the lexical side's weight trades identifier recall for
    paraphrase recall), or ``hybrid:<fusion>`` for hybrid with that fusion (``core.hybrid.FUSIONS``,
    e.g. ``hybrid:information``)."""
    if mode in MODES:
        return MODES[mode]
    name, _, part = mode.partition(":")
    if name == "hybrid" and part in FUSIONS:
        return {"fusion": part}
    try:
        if name == "hybrid" and float(part) >= 0:
            return {"lexical_weight": float(part)}
    except ValueError:
        pass
    raise SystemExit(
        f"unknown mode {mode!r}; known: {list(MODES)}, hybrid:<lexical weight> or hybrid:<fusion> "
        f"of {list(FUSIONS)}"
    )


def index(
    embed: Embeddings, mode: str, ann: dict[str, int] | None = None, text_config: str | None = None
) -> dict[str, Any]:
    """The index of a store in ``mode``, with ``ann`` as its ``ann_index_config`` (see
    :func:`fixed_search`) and a hybrid mode's ``text_config`` (Postgres; ``None``: the default);
    its dimensions the embedder's ``dims`` (:data:`DIMS` without one)."""
    dims = getattr(embed, "dims", DIMS)
    config: dict[str, Any] = {"dims": dims, "embed": embed, "fields": ["text"]}
    if ann:
        config["ann_index_config"] = ann
    if (option := hybrid_option(mode)) is not None:
        if text_config is not None:
            option = {**(option if isinstance(option, dict) else {}), "text_config": text_config}
        config["hybrid"] = option
    return config


# --------------------------------------------------------------------------- servers and stores


@contextmanager
def postgres_store(
    dsn: str,
    embed: Embeddings,
    mode: str,
    place: str = "",
    ann: dict[str, int] | None = None,
    text_config: str | None = None,
) -> Iterator[BaseStore]:
    """A set-up store in ``mode`` on the tables ``place`` of the benchmark schema (ours; the
    official store: fresh tables of its own), searching with ``ann``; a hybrid one parsing texts
    with ``text_config``."""
    from langgraph.store.postgres import PostgresStore as OfficialStore

    from langmem_adapters.postgres import PostgresStore

    conninfo = make_conninfo(dsn, options=f"-c search_path={SCHEMA},public")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    if mode == "official":
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {SCHEMA}.store, {SCHEMA}.store_vectors CASCADE")
            conn.execute(f"DROP TABLE IF EXISTS {SCHEMA}.store_migrations CASCADE")
            conn.execute(f"DROP TABLE IF EXISTS {SCHEMA}.vector_migrations CASCADE")
        with OfficialStore.from_conn_string(conninfo, index=index(embed, mode)) as official:  # type: ignore[arg-type]
            official.setup()
            yield official
        return
    with PostgresStore.from_conn_string(
        conninfo,
        index=index(embed, mode, ann, text_config),  # type: ignore[arg-type]
        table_prefix=place,
    ) as store:
        store.setup()
        yield store


@contextmanager
def redis_store(
    url: str,
    embed: Embeddings,
    mode: str,
    place: str = "",
    ann: dict[str, int] | None = None,
    *,
    plain: bool = False,
) -> Iterator[BaseStore | None]:
    """A set-up store in ``mode`` on the key prefix ``place`` (ours; the official store: fresh
    prefixes of its own), searching with ``ann``; our plain mode with ``plain``, where the official
    store cannot run (``None`` for it)."""
    from langgraph.store.redis import RedisStore as OfficialStore

    from langmem_adapters.redis import RedisStore

    tag = uuid.uuid4().hex[:8]
    if mode == "official" and plain:
        yield None
        return
    if mode == "official":
        with OfficialStore.from_conn_string(
            url,
            index=index(embed, mode),  # type: ignore[arg-type]
            store_prefix=f"offr{tag}",
            vector_prefix=f"offrv{tag}",
        ) as official:
            official.setup()
            yield official
        return
    with RedisStore.from_conn_string(
        url,
        index=index(embed, mode, ann),  # type: ignore[arg-type]
        prefix=place,
        mode="plain" if plain else "query_engine",
    ) as store:
        yield store


def analyze(dsn: str, place: str) -> None:
    """``ANALYZE`` our tables ``place`` after the load, as autovacuum does within a minute of it:
    the lexical statement reads the planner's row estimate and the ``tsv`` column's statistics, so
    searches of a table not analyzed yet depend on when autovacuum happens to run (measured at 320
    memories: identifier recall@5 across users 0.889 before, 1.000 after)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (SCHEMA, f"{place}%"),
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'ANALYZE {SCHEMA}."{table}"')


def settled(dsn: str, place: str) -> None:
    """Nothing to settle after a load (Redis keeps no planner statistics)."""


#: Per backend: how its server is found (the option, an environment variable, else started here),
#: how a store in a mode is opened on it, and what follows a load (server, place).
BACKENDS: dict[
    str, tuple[Callable[[str | None], str], Callable[..., Any], Callable[[str, str], None]]
] = {
    "postgres": (resolve_dsn, postgres_store, analyze),
    "redis": (resolve_url, redis_store, settled),
    "redis-plain": (partial(resolve_url, modules=False), partial(redis_store, plain=True), settled),
}


def fixed_search(store: BaseStore) -> dict[str, int]:
    """The ``ann_index_config`` that fixes the vector search ``store`` calibrated itself to (now,
    on its loaded data): its breadth, or an exact scan where it chose one; ``{}`` where its search
    is exact anyway (plain mode, a small index)."""
    stats = store.calibrate() if hasattr(store, "calibrate") else None
    if stats is None or stats.source == "exact":
        return {}
    if stats.mode == "exact" or stats.breadth is None:
        return {"exact_below": 2**31 - 1}
    return {"ef_search": stats.breadth}
