"""The calibration probe never holds the (single-threaded) server for long: every query is a round
of its own, and its sample draws random keys instead of paging the index to random offsets, falling
back to those offsets (one per round) where the draws find too few documents. At 300,000 vectors
the pipelined probe held Redis past the clients' 5 s socket timeout (docs/benchmarks.md,
"Calibration at 300,000 vectors on Redis")."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.core.drive import Steps, drive
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.probe import RedisProbe
from langmem_adapters.redis.scripts import Round
from tests import servers
from tests.calibration_data import DATA, DIMS, QUERIES, TableEmbeddings

N = 300


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(servers.redis_url(modules=True))
    yield conn
    conn.close()


def _loaded(client: redis.Redis, n: int = N) -> RedisStore:
    index = {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["t"]}
    store = RedisStore(client, index=index, prefix=f"probe{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
    store.setup()
    store.batch([PutOp(("docs", f"u{i % 4}"), str(i), {"t": f"x:{i}"}) for i in range(n)])
    return store


def _probe(store: RedisStore) -> RedisProbe:
    probe = store._probe()
    assert probe is not None
    return probe


def _run(store: RedisStore, steps: Steps[Any], rounds: list[Round]) -> Any:
    """Drive ``steps`` on the store's connection, keeping every round it sends."""
    with store._session() as execute:

        def answer(request: Any) -> Any:
            rounds.append(request)
            return execute(request)

        return drive(steps, answer)


def _queries_per_round(rounds: list[Round]) -> list[int]:
    """How many index queries (``FT.SEARCH``) each round sent."""
    return [sum(1 for c in r.calls if c.args[:1] == ("FT.SEARCH",)) for r in rounds]


def _stored(vectors: list[list[float]], n: int = N) -> bool:
    """Whether every vector is one of the first ``n`` stored ones, each at most once."""
    data = DATA[:n]
    found = [int(np.argmin(np.abs(data - np.asarray(v, np.float32)).sum(axis=1))) for v in vectors]
    close = all(np.allclose(data[i], v, atol=1e-5) for i, v in zip(found, vectors))
    return close and len(set(found)) == len(found)


def test_every_query_of_a_check_is_a_round_of_its_own(client: redis.Redis) -> None:
    store = _loaded(client)
    probe = _probe(store)
    queries = [QUERIES[q].tolist() for q in range(12)]
    rounds: list[Round] = []
    sample = _run(store, probe.sample(20), rounds)
    exact = _run(store, probe.exact(queries, 10), rounds)
    ann = _run(store, probe.ann(queries, 10, 64), rounds)
    assert max(_queries_per_round(rounds)) == 1
    assert len(sample) == 20 and _stored(sample)
    assert [len(hits) for hits in exact] == [10] * 12
    assert [len(hits) for hits in ann] == [10] * 12
    data = DATA[:N] / np.linalg.norm(DATA[:N], axis=1, keepdims=True)
    for q, hits in zip(queries, exact):  # still the exact nearest, in order
        sims = data @ (np.asarray(q) / np.linalg.norm(q))
        assert [int(doc.rsplit(":", 1)[1]) for doc, _ in hits] == list(np.argsort(-sims)[:10])


def _foreign_keys(client: redis.Redis, n: int) -> Callable[[], None]:
    """``n`` keys of another application; returns their removal."""
    tag = uuid.uuid4().hex[:8]
    names = [f"other{tag}:{i}" for i in range(n)]
    with client.pipeline(transaction=False) as pipe:
        for start in range(0, n, 1000):
            pipe.mset({name: "x" for name in names[start : start + 1000]})
        pipe.execute()
    return lambda: client.delete(*names) and None


def test_a_sample_among_many_other_keys_pages_the_index_one_round_each(
    client: redis.Redis,
) -> None:
    """Twenty documents among 30,000 keys of another application: the draws find few, the rest
    come from random offsets of the index, each its own round; every vector a stored one."""
    store = _loaded(client, 20)
    remove = _foreign_keys(client, 30_000)
    try:
        rounds: list[Round] = []
        sample = _run(store, _probe(store).sample(15), rounds)
    finally:
        remove()
    assert len(sample) == 15 and _stored(sample, 20)
    assert max(_queries_per_round(rounds)) == 1
    assert any(c.args[0] == "RANDOMKEY" for r in rounds for c in r.calls)


def test_a_user_denied_randomkey_still_samples(client: redis.Redis) -> None:
    """An ACL user without ``RANDOMKEY``: the draws answer errors, the sample pages the index."""
    store = _loaded(client, 40)
    user, password = f"probe{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    client.acl_setuser(
        user,
        enabled=True,
        passwords=[f"+{password}"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-randomkey"],
    )
    url = servers.redis_url(modules=True).replace("redis://", f"redis://{user}:{password}@")
    limited = redis.Redis.from_url(url)
    try:
        index = {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["t"]}
        other = RedisStore(limited, index=index, prefix=store.keys.prefix)  # type: ignore[arg-type]
        other.setup()
        with pytest.raises(redis.exceptions.NoPermissionError):
            limited.randomkey()
        rounds: list[Round] = []
        sample = _run(other, _probe(other).sample(10), rounds)
    finally:
        limited.close()
        client.acl_deluser(user)
    assert len(sample) == 10 and _stored(sample, 40)
    assert max(_queries_per_round(rounds)) == 1
