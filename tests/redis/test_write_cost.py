"""What writes cost the server, read from ``MONITOR`` (which lists the commands a Lua script runs
too): round trips and commands per write as bounds, and what the writes leave stored, rather than
the exact commands the scripts run today."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.layout import GRACE_MS
from tests import servers


@dataclass
class Sent:
    """The commands naming a store's prefix while a write ran: sent by the client (each a round
    trip's worth, pipelined or not) and run inside Lua scripts."""

    client: list[str] = field(default_factory=list)
    scripted: list[str] = field(default_factory=list)


def _sent(url: str, prefix: str, write: Callable[[], object]) -> Sent:
    """The commands the server received on this store's keys while ``write()`` ran."""
    client = redis.Redis.from_url(url)
    marker = f"done-{prefix}"
    sent = Sent()
    try:
        with client.monitor() as monitor:
            write()
            other = redis.Redis.from_url(url)
            other.echo(marker)
            other.close()
            while marker not in (entry := monitor.next_command())["command"]:
                if prefix in entry["command"]:
                    name = entry["command"].split(" ", 1)[0].upper()
                    (sent.scripted if entry["client_type"] == "lua" else sent.client).append(name)
    finally:
        client.close()
    return sent


@pytest.mark.parametrize("modules", [True, False])
def test_a_permanent_put_is_one_call_of_a_few_commands(modules: bool) -> None:
    """A put of a permanent item into a registered namespace is one script call (one round trip)
    that runs at most six commands, writes the item and leaves it, its namespace and the registry
    without expiry."""
    url = servers.redis_url(modules=modules)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisStore(url, prefix=prefix)
    store.put(("a", "b"), "first", {"x": 1})
    sent = _sent(url, prefix, lambda: store.put(("a", "b"), "k", {"x": 2}))
    assert sent.client == ["EVALSHA"]
    assert "HSET" in sent.scripted and len(sent.scripted) <= 6
    assert store.get(("a", "b"), "k").value == {"x": 2}  # type: ignore[union-attr]
    client = redis.Redis.from_url(url)
    assert client.pttl(store.keys.registry) == -1
    assert client.pttl(store.keys.zset("a.b")) == -1
    assert client.zcard(store.keys.zset("a.b")) == 2  # both items, each listed once
    client.close()
    store.close()


@pytest.mark.parametrize("modules", [True, False])
def test_a_batch_of_puts_is_one_call_whose_cost_grows_with_its_items_only(modules: bool) -> None:
    """A batch of 50 puts into one namespace is one script call, and the commands it runs stay
    within a few per item: the namespace's bookkeeping is paid once, not per item."""
    url = servers.redis_url(modules=modules)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisStore(url, prefix=prefix)
    store.put(("a",), "first", {"x": 0})
    ops = [PutOp(("a",), f"k{i}", {"x": i}) for i in range(50)]
    sent = _sent(url, prefix, lambda: store.batch(ops))
    assert sent.client == ["EVALSHA"]
    assert sent.scripted.count("HSET") == 50
    assert len(sent.scripted) <= 3 * 50 + 6
    assert [store.get(("a",), f"k{i}").value for i in (0, 49)] == [{"x": 0}, {"x": 49}]  # type: ignore[union-attr]
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
