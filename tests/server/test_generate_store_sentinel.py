"""``generate_store`` (the LangGraph server's store) on a ``redis+sentinel://`` URL."""

from __future__ import annotations

import time
import uuid

import pytest

from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import AsyncRedisStore
from langmem_adapters.server import generate_store
from tests import servers
from tests.servers import free_port


async def test_generate_store_on_a_sentinel_url(monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"gens{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("LANGMEM_STORE_URL", f"{servers.redis_sentinel_url()}?prefix={prefix}")
    monkeypatch.setenv("LANGMEM_EMBED", "hash:16")
    async with generate_store() as store:
        assert isinstance(store, AsyncRedisStore)
        assert store.keys.prefix == prefix and "sentinel_service=" in repr(store)
        await store.aput(("users", "ada"), "k", {"text": "tea with jasmine"})
        found = await store.asearch(("users",), query="jasmine")
        assert [item.key for item in found] == ["k"]


async def test_unreachable_sentinels_fail_the_start_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"redis+sentinel://user:hunter2@127.0.0.1:{free_port()}/mymaster"
    monkeypatch.setenv("LANGMEM_STORE_URL", url)
    started = time.monotonic()
    with pytest.raises(StoreConnectionError) as raised:
        async with generate_store():
            pytest.fail("a store was yielded though no sentinel answers")
    assert time.monotonic() - started < 10
    message = str(raised.value)
    assert message.startswith("LANGMEM_STORE_URL: cannot connect to") and "hunter2" not in message
