"""Copying items between stores, losslessly: timestamps, expiry and TTL kept, vectors computed for
the target's index.

- Sources: :class:`StoreSource` (one of this package's stores, read with ``iter_items``),
  :class:`OfficialPostgresReader` and :class:`OfficialRedisReader` (the official LangGraph stores'
  data). Each yields pages of :class:`~langmem_adapters.core.records.StoredItem` with a resumable
  position.
- :func:`migrate`: a resumable, checkpointed copy from a source into a store (``restore``).
- JSON lines: :func:`item_to_json` / :func:`item_from_json` (one item per line, the ``export``
  format), :func:`read_items` / :func:`write_items` for whole streams.

Example::

    from langmem_adapters.transfer import StoreSource, migrate

    result = migrate(StoreSource(old_store), new_store, "migrate-checkpoint.json")
"""

from langmem_adapters.compat import moved
from langmem_adapters.transfer.jsonl import item_from_json, item_to_json, read_items, write_items
from langmem_adapters.transfer.migrate import Checkpoint, MigrationResult, migrate
from langmem_adapters.transfer.official import OfficialPostgresReader, OfficialRedisReader
from langmem_adapters.transfer.source import Page, Position, Source, StoreSource

__all__ = [
    "Checkpoint",
    "MigrationResult",
    "OfficialPostgresReader",
    "OfficialRedisReader",
    "Page",
    "Position",
    "Source",
    "StoreSource",
    "item_from_json",
    "item_to_json",
    "migrate",
    "read_items",
    "write_items",
]

# StoredItem and the errors live in langmem_adapters (langmem_adapters.errors for the errors);
# their old paths from here still work.
__getattr__ = moved(
    __name__,
    {
        "StoredItem": "langmem_adapters",
        "InvalidArgumentError": "langmem_adapters.errors",
        "InvalidRecordError": "langmem_adapters.errors",
        "StoreError": "langmem_adapters.errors",
    },
)
