"""Where the Redis stores keep embedder identities: the ``P:embedders`` hash, one field per vector
index of the prefix (see :mod:`langmem_adapters.core.identity` for the rules)."""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from langmem_adapters.core.identity import Identity, Recorded
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.layout import Keys, text
from langmem_adapters.redis.scripts import Call, Round

__all__ = ["RedisIdentity", "recorded_json"]


def recorded_json(identity: Identity, generation: int) -> str:
    """A field of ``P:embedders``: the identity and the generation of the vectors it describes."""
    return json.dumps({"identity": json.loads(identity.to_json()), "generation": generation})


class RedisIdentity:
    """The identities of one prefix's vector indexes (an :class:`~langmem_adapters.core.identity.IdentityAccess`)."""

    def __init__(self, keys: Keys, spec: IndexSpec) -> None:
        self.keys = keys
        self.name = keys.index(spec)

    def read(self) -> Generator[Round, list[Any], dict[str, Recorded]]:
        """Every identity recorded on the prefix, by vector index name."""
        (fields,) = yield Round([Call(("HGETALL", self.keys.embedders))])
        pairs = fields.items() if isinstance(fields, dict) else zip(fields[::2], fields[1::2])
        return {text(name): _recorded(raw) for name, raw in pairs}

    def record(self, identity: Identity, generation: int) -> Generator[Round, list[Any], Recorded]:
        """Record ``identity`` for this index unless a racing store did first; the one recorded."""
        field = recorded_json(identity, generation)
        setnx = Call(("HSETNX", self.keys.embedders, self.name, field))
        _, raw = yield Round([setnx, Call(("HGET", self.keys.embedders, self.name))])
        return _recorded(raw)


def _recorded(raw: Any) -> Recorded:
    """A field of ``P:embedders`` read back (see :func:`recorded_json`)."""
    data = json.loads(text(raw))
    return Recorded(Identity.from_json(data["identity"]), data["generation"])
