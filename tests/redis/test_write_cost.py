"""What one write-script call sends to the server: the commands a single put costs, read from
``MONITOR`` (which lists the commands a Lua script runs), and the registry trim it leaves to
expiring batches."""

from __future__ import annotations

import uuid

import pytest
import redis

from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.layout import GRACE_MS
from tests import servers


def _script_commands(url: str, prefix: str, write: object) -> list[str]:
    """The commands the server ran inside scripts on this store's keys while ``write()`` ran."""
    client = redis.Redis.from_url(url)
    marker = f"done-{prefix}"
    names: list[str] = []
    try:
        with client.monitor() as monitor:
            write()  # type: ignore[operator]
            other = redis.Redis.from_url(url)
            other.echo(marker)
            other.close()
            while marker not in (entry := monitor.next_command())["command"]:
                if entry["client_type"] == "lua" and prefix in entry["command"]:
                    names.append(entry["command"].split(" ", 1)[0].upper())
    finally:
        client.close()
    return names


@pytest.mark.parametrize("modules", [True, False])
def test_a_permanent_put_runs_six_commands(modules: bool) -> None:
    """A put of a permanent item into a registered namespace: read the item, write its hash, its
    ZSET entry and the ZSET's expiry, the registry entry and the registry's expiry. The registry's
    top is not read (an entry that never expires is its top) and its expired entries are not
    trimmed (a batch that deletes or writes with a TTL does that): two calls of eight saved."""
    url = servers.redis_url(modules=modules)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisStore(url, prefix=prefix)
    store.put(("a", "b"), "first", {"x": 1})
    names = _script_commands(url, prefix, lambda: store.put(("a", "b"), "k", {"x": 2}))
    assert names == ["HMGET", "HSET", "ZADD", "PERSIST", "ZADD", "PERSIST"]
    assert store.get(("a", "b"), "k").value == {"x": 2}  # type: ignore[union-attr]
    client = redis.Redis.from_url(url)
    assert client.pttl(store.keys.registry) == -1
    client.close()
    store.close()


def test_expired_registry_entries_are_trimmed_by_expiring_batches() -> None:
    """Registry entries past their grace are left by permanent puts (readers skip them) and dropped
    by the next batch that writes with a TTL or deletes, as the namespace ZSETs' entries are."""
    url = servers.redis_url(modules=True)
    client = redis.Redis.from_url(url)
    store = RedisStore(url, prefix=f"t{uuid.uuid4().hex[:12]}")
    store.put(("live",), "k", {"x": 1})
    client.zadd(store.keys.registry, {"gone": 1})  # expired long ago, beyond the grace
    store.put(("live",), "k2", {"x": 2})
    assert client.zscore(store.keys.registry, "gone") == 1
    assert store.list_namespaces() == [("live",)]
    store.put(("live",), "k3", {"x": 3}, ttl=1)
    assert client.zscore(store.keys.registry, "gone") is None
    client.zadd(store.keys.registry, {"gone": 1})
    store.delete(("live",), "k3")
    assert client.zscore(store.keys.registry, "gone") is None
    assert GRACE_MS > 0 and client.pttl(store.keys.registry) == -1
    client.close()
    store.close()
