"""The ``langmem-adapters`` command (also ``python -m langmem_adapters``).

Sub-commands:

- ``demo``: an agent with memory tools on the embedded PostgreSQL (or ``--store URL``), offline by
  default with a scripted model; ``--model provider:name`` uses a real chat model.
- ``inspect URL``: namespace tree with item counts, the items under a namespace, or a search.
- ``export URL`` / ``import URL``: every item as JSON lines (namespace, key, value, timestamps, TTL).
- ``migrate --from URL --to URL``: copy everything between stores, resumably, re-embedding for the
  target's index; also reads the official LangGraph Postgres and Redis stores' data.
- ``sweep URL``: delete expired items now and report how many went.
- ``ui [URL]``: a local web page to browse, search and (unless ``--read-only``) delete memories.

URLs: ``postgresql://`` / ``postgres://`` (this package's ``PostgresStore``; add
``?table_prefix=NAME`` for a store made with another ``table_prefix``), ``redis://`` / ``rediss://`` /
``redis+sentinel://`` (this package's ``RedisStore``), ``embedded`` or ``embedded:PATH`` (the embedded PostgreSQL and its
data directory), and, as sources for ``migrate`` and ``export`` only, ``official+postgresql://...``
(the official ``langgraph.store.postgres`` table ``store``) and ``official+redis://...`` (the official
``langgraph.store.redis`` JSON documents ``store:<ULID>``).

A user mistake (bad URL, server down, unknown namespace, malformed input) is reported as one line
``error: ...`` on stderr with exit code 2 for bad usage and 1 for everything else; never a traceback.

The work itself is done by the stores and :mod:`langmem_adapters.transfer`; this package parses
(:mod:`~langmem_adapters.cli.parser`, :mod:`~langmem_adapters.cli.options`; store URLs and
embedders with :mod:`langmem_adapters.settings`, which the LangGraph server shares), opens
(:mod:`~langmem_adapters.cli.locations`), runs (:mod:`~langmem_adapters.cli.commands`) and prints
(:mod:`~langmem_adapters.cli.render`).
"""

from langmem_adapters.cli.parser import build_parser, main
from langmem_adapters.compat import moved

__all__ = ["build_parser", "main"]

__getattr__ = moved(
    __name__, {"SCRIPTED_LABEL": "langmem_adapters.demo", "CLIError": "langmem_adapters.errors"}
)
