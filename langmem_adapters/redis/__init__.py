"""Redis / Valkey stores for LangGraph: Query Engine mode when available, plain Redis otherwise."""

from langmem_adapters.redis.store import AsyncRedisStore, RedisStore

__all__ = ["AsyncRedisStore", "RedisStore"]
