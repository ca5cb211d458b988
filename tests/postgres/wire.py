"""What a Postgres store sends on a connection, seen through psycopg's public API: libpq's own
protocol trace (``PGconn.trace``), read for the statements parsed and the round trips made (one
``ReadyForQuery`` from the server ends each exchange the client waits for: a lone statement, or a
pipeline ended by its ``Sync``)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import pq

__all__ = ["Trace", "traced"]


@dataclass
class Trace:
    """The protocol messages of one traced block, one per line (filled in when the block ends)."""

    lines: list[str] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        """Round trips: exchanges the server ended with ``ReadyForQuery``."""
        return sum(1 for line in self.lines if _message(line) == ("B", "ReadyForQuery"))

    @property
    def sql(self) -> list[str]:
        """The statements sent with their text (``Parse``, or a simple ``Query``), as traced."""
        return [line for line in self.lines if _message(line) in (("F", "Parse"), ("F", "Query"))]


def _message(line: str) -> tuple[str, str]:
    parts = line.split("\t")
    return (parts[0], parts[2]) if len(parts) > 2 else ("", "")


@contextmanager
def traced(conn: psycopg.Connection[Any]) -> Iterator[Trace]:
    """Trace ``conn``'s protocol messages while the block runs."""
    trace = Trace()
    with tempfile.TemporaryFile() as f:
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield trace
        finally:
            conn.pgconn.untrace()
            f.seek(0)
            trace.lines = f.read().decode("utf-8", "replace").splitlines()
