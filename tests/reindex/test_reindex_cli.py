"""``langmem-adapters reindex URL --embed ...``: every item re-embedded with the new embedder, on
Postgres and Redis; the store then answers with the new model and refuses the old one."""

from __future__ import annotations

import uuid

import pytest

from langmem_adapters import EmbeddingMismatchError
from langmem_adapters.cli import main
from langmem_adapters.cli.locations import open_store
from langmem_adapters.settings import parse_embed, parse_location
from tests import servers


def _url(backend: str) -> str:
    fresh = f"r{uuid.uuid4().hex[:10]}"
    if backend == "postgres":
        dsn = servers.postgres_dsn()  # a postgresql:// URL
        return f"{dsn}{'&' if '?' in dsn else '?'}table_prefix={fresh}"
    return f"{servers.redis_url(modules=backend == 'redis-qe')}?prefix={fresh}"


@pytest.mark.parametrize("backend", ["postgres", "redis-qe", "redis-plain"])
def test_reindex_command(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = _url(backend)
    old = parse_embed("hash:16", ["text"])
    with open_store(parse_location(url), old, create=True) as store:
        for i in range(30):
            store.put(("notes",), f"n{i}", {"text": f"note {i} about cats"})
    assert main(["reindex", url, "--embed", "hash:24", "--fields", "text", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"reindexed": 30' in out
    with open_store(parse_location(url), parse_embed("hash:24", ["text"])) as store:
        hits = store.search(("notes",), query="note 7 about cats", limit=1)
        assert hits[0].key == "n7" and hits[0].score == pytest.approx(1.0, abs=1e-3)
    with open_store(parse_location(url), old) as store, pytest.raises(EmbeddingMismatchError):
        store.search(("notes",), query="cats")
    assert main(["reindex", url]) == 2  # --embed is required
    assert "--embed" in capsys.readouterr().err
