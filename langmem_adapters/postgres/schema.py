"""The Postgres schema: table names, versioned migrations, the vector table and its ANN index, and
the ``setup()`` plan that applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.postgres.sql import Round, Statement

__all__ = [
    "NS_WORD_CHARS",
    "SCHEMA_VERSION",
    "Tables",
    "ann_index_ddl",
    "ann_index_name",
    "check_ann",
    "index_tables_ddl",
    "lexical_index_ddl",
    "lexical_words",
    "migrations",
    "ns_words",
    "ns_words_sql",
    "setup_plan",
    "vector_ddl",
]

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Tables:
    """Table names of one store; ``prefix`` lets several stores share a database."""

    prefix: str
    #: The generation of the vector tables (0 until a ``reindex`` switched them): part of their name.
    generation: int = 0

    def __post_init__(self) -> None:
        """The prefix is spliced into SQL as an identifier: only ASCII letters, digits and ``_``."""
        if (
            not self.prefix.replace("_", "").isalnum()
            or not self.prefix.isascii()
            or self.prefix[0].isdigit()
        ):
            raise InvalidArgumentError(
                f"table_prefix must be an ASCII identifier, got {self.prefix!r}"
            )

    @property
    def store(self) -> str:
        """The items table."""
        return f"{self.prefix}_store"

    @property
    def namespaces(self) -> str:
        """The namespace registry (what ``list_namespaces`` reads)."""
        return f"{self.prefix}_namespaces"

    @property
    def migrations(self) -> str:
        """The applied schema versions."""
        return f"{self.prefix}_migrations"

    def vectors(self, spec: IndexSpec) -> str:
        """One vector table per vector type and size, so stores with other embedders can share the DB
        (with ``_g<generation>`` once a ``reindex`` made a new one)."""
        base = self.vector_family(spec)
        return f"{base}_g{self.generation}" if self.generation else base

    def vector_family(self, spec: IndexSpec) -> str:
        """The vector table's name without its generation: what its embedder identity is kept under."""
        return f"{self.prefix}_vectors_{spec.vector_type}{spec.dims}"

    @property
    def embedders(self) -> str:
        """The embedder identity of each vector table family, with its current generation."""
        return f"{self.prefix}_embedders"

    @property
    def terms(self) -> str:
        """The word frequencies of each hybrid vector table's ``tsv``, copied from its statistics
        (``postgres.lexical``: what a search reads instead of the ``pg_stats`` view)."""
        return f"{self.prefix}_terms"

    @property
    def calibration(self) -> str:
        """What the recall calibration measured, one row per vector index (kept for new stores)."""
        return f"{self.prefix}_calibration"

    @property
    def reindexing(self) -> str:
        """The position of each ``reindex`` in progress (one per source vector table family)."""
        return f"{self.prefix}_reindexing"


def migrations(t: Tables) -> list[list[str]]:
    """Versioned schema steps, one list of statements per version; ``setup()`` applies missing ones."""
    return [
        [
            f"""
            CREATE TABLE IF NOT EXISTS {t.store} (
                ns text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value jsonb NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz,
                ttl_minutes double precision,
                PRIMARY KEY (ns, key)
            )
            """,
            f"CREATE INDEX IF NOT EXISTS {t.store}_expires_idx ON {t.store} (expires_at) WHERE expires_at IS NOT NULL",
            f"""
            CREATE TABLE IF NOT EXISTS {t.namespaces} (
                ns text COLLATE "C" PRIMARY KEY,
                labels text[] COLLATE "C" NOT NULL,
                depth int NOT NULL
            )
            """,
        ],
        # 1: each namespace's items newest first, so a plain search walks only the page's rows of
        # each namespace under its prefix, whatever the item count (see ``plain_search``).
        [
            f"CREATE INDEX IF NOT EXISTS {t.store}_ns_updated_idx "
            f"ON {t.store} (ns, updated_at DESC, key)"
        ],
        # 2: per vector table, the share of its rows holding each common word (``lex`` '' holds
        # the epoch of the ANALYZE it was copied from), so a hybrid search looks words up by key.
        [
            f"""
            CREATE TABLE IF NOT EXISTS {t.terms} (
                tbl text COLLATE "C" NOT NULL,
                lex text COLLATE "C" NOT NULL,
                f float8 NOT NULL,
                PRIMARY KEY (tbl, lex)
            )
            """
        ],
    ]


_OPCLASS = {"cosine": "cosine", "l2": "l2", "inner_product": "ip"}


def ann_index_name(table: str, spec: IndexSpec) -> str:
    """The name of the ANN index of the vector table ``table`` (one per distance and index kind)."""
    return f"{table}_{_OPCLASS[spec.distance]}_{spec.kind}_idx"


def ann_index_ddl(table: str, spec: IndexSpec) -> str | None:
    """``CREATE INDEX IF NOT EXISTS`` of the ANN index of ``spec`` on the vector table ``table``
    (``None`` for an exact index: it has none)."""
    if spec.kind == "exact":
        return None
    params = {k: v for k, v in spec.ann.items() if k in ("m", "ef_construction", "lists")}
    if spec.kind == "ivfflat" and "nlist" in spec.ann:
        params["lists"] = spec.ann["nlist"]
    for k, v in params.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InvalidArgumentError(
                f"ann_index_config {k} must be a positive integer, got {v!r}"
            )
    with_ = f" WITH ({', '.join(f'{k} = {v}' for k, v in params.items())})" if params else ""
    return (
        f"CREATE INDEX IF NOT EXISTS {ann_index_name(table, spec)} ON {table} "
        f"USING {spec.kind} (embedding {spec.vector_type}_{_OPCLASS[spec.distance]}_ops){with_}"
    )


def index_tables_ddl(t: Tables) -> list[str]:
    """DDL for the tables every vector index of the store shares: the embedder identity of each
    vector table family, the position of a running reindex and the last recall calibration of
    each vector index (idempotent). Created by the setup of
    a store with an index rather than as a schema version: a store without one never needs them."""
    return [
        f"""
        CREATE TABLE IF NOT EXISTS {t.embedders} (
            vectors text COLLATE "C" PRIMARY KEY,
            identity jsonb NOT NULL,
            generation int NOT NULL DEFAULT 0
        )
        """,
        f"""
        CREATE TABLE IF NOT EXISTS {t.reindexing} (
            source text COLLATE "C" PRIMARY KEY,
            shadow text NOT NULL,
            generation int NOT NULL,
            identity jsonb NOT NULL,
            fields jsonb NOT NULL,
            after_ns text COLLATE "C" NOT NULL DEFAULT '',
            after_key text COLLATE "C" NOT NULL DEFAULT '',
            done bigint NOT NULL DEFAULT 0,
            started_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        f"""
        CREATE TABLE IF NOT EXISTS {t.calibration} (
            idx text COLLATE "C" PRIMARY KEY,
            measurement jsonb NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        )
        """,
    ]


def vector_ddl(t: Tables, spec: IndexSpec) -> list[str]:
    """DDL for the vector table of ``spec`` (with the ``tsv`` column the lexical side of hybrid
    search reads: NULL for rows a non-hybrid store wrote), its ANN index and, for a hybrid store,
    the GIN index of ``tsv`` (idempotent)."""
    vt = t.vectors(spec)
    ddl = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""
        CREATE TABLE IF NOT EXISTS {vt} (
            ns text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            field text NOT NULL,
            text_hash text NOT NULL,
            embedding {spec.vector_type}({spec.dims}) NOT NULL,
            tsv tsvector,
            PRIMARY KEY (ns, key, field),
            FOREIGN KEY (ns, key) REFERENCES {t.store} (ns, key) ON DELETE CASCADE
        )
        """,
        # A table made before hybrid search gets the (NULL, metadata-only) column; checked first, so
        # a table that has it is not locked by every setup().
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{vt}'::regclass
                           AND attname = 'tsv' AND NOT attisdropped) THEN
                ALTER TABLE {vt} ADD COLUMN tsv tsvector;
            END IF;
        END $$
        """,
    ]
    index = ann_index_ddl(vt, spec)
    if index is not None:
        ddl.append(index)
    if spec.hybrid is not None:
        ddl.extend(lexical_index_ddl(vt))
    return ddl


#: How much of a namespace's text form its words are taken from (a lexeme holds at most 2,047
#: bytes; labels are cut, not refused). Words only narrow the rows the index returns: a search keeps
#: its own namespace condition, so labels that share their first characters lose nothing.
NS_WORD_CHARS = 500


def ns_words(ns: str) -> list[str]:
    """The words of the namespace (or prefix) text form ``ns`` (``core.namespaces.join``): each
    label of its first ``NS_WORD_CHARS`` characters, a space first (no text-search parser leaves
    one in a word, so no text's word is ever a namespace's); ``[]`` for the empty prefix. A
    prefix's words are among those of every namespace under it. ``ns_words_sql`` is the same in
    SQL."""
    return [" " + label for label in ns[:NS_WORD_CHARS].split(".")] if ns else []


def ns_words_sql(ns: str) -> str:
    """``ns_words`` of the SQL text expression ``ns``, as an SQL ``text[]`` expression."""
    return f"string_to_array(' ' || replace(left({ns}, {NS_WORD_CHARS}), '.', '. '), '.')"


def lexical_words(alias: str = "") -> str:
    """What the lexical index holds of a vector row (of ``alias``, if given): its text's words and
    its namespace's words (``ns_words``). The lexical statement spells it the same way: the planner
    uses the index only for this very expression."""
    a = f"{alias}." if alias else ""
    return f"({a}tsv || array_to_tsvector({ns_words_sql(a + 'ns')}))"


def lexical_index_ddl(table: str) -> list[str]:
    """The GIN index of the lexical side of hybrid search on the vector table ``table`` (made by the
    setup of a hybrid store only, idempotent): each row's ``tsv`` and its namespace's labels
    (``lexical_words``), so that a search under a prefix finds a word's rows under it in the index
    instead of reading every row holding the word (docs/hybrid.md); it replaces the index of
    ``tsv`` alone that stores made before 2026-12-05 built, and analyzes the table once (the
    namespace words' shares of the rows, ``postgres.lexical.prefix_query``, come from the index's
    statistics: a table no write changes would not be analyzed again). Without GIN's pending list
    (``fastupdate = off``): every search would scan the rows written since the last vacuum
    (measured 2.5 ms a term, 40-60 ms a search, on 3,200 freshly written rows)."""
    return [
        f"""
        DO $$ BEGIN
            IF to_regclass('{table}_lex_idx') IS NULL THEN
                CREATE INDEX {table}_lex_idx ON {table} USING gin ({lexical_words()})
                    WITH (fastupdate = off);
                ANALYZE {table};
            END IF;
        END $$
        """,
        f"DROP INDEX IF EXISTS {table}_tsv_idx",
    ]


def setup_plan(t: Tables, spec: IndexSpec | None) -> Steps[None]:
    """Create or upgrade the schema under an advisory lock, so concurrent ``setup()`` calls are safe."""
    yield Round(
        [
            Statement("SELECT pg_advisory_xact_lock(hashtext(%s))", [t.prefix]),
            Statement(
                f"CREATE TABLE IF NOT EXISTS {t.migrations} (v int PRIMARY KEY)", fetch=False
            ),
        ],
        tx=True,
    )
    (rows,) = yield Round([Statement(f"SELECT coalesce(max(v), -1) FROM {t.migrations}")])
    done = rows[0][0]
    steps = [
        Statement(sql, fetch=False)
        for v, step in enumerate(migrations(t))
        if v > done
        for sql in step
    ] + [
        Statement(f"INSERT INTO {t.migrations} (v) VALUES (%s)", [v], fetch=False)
        for v in range(done + 1, SCHEMA_VERSION)
    ]
    if spec is not None:
        steps += [Statement(sql, fetch=False) for sql in vector_ddl(t, spec)]
    if steps:
        yield Round(steps)


def check_ann(spec: IndexSpec | None) -> None:
    """Reject ``ann_index_config`` numbers that are not integers of the right sign, before any I/O."""
    for name in ("m", "ef_construction", "ef_search", "lists", "nlist", "probes", "exact_below"):
        v = spec.ann.get(name) if spec is not None else None
        if v is None:
            continue
        low = 0 if name == "exact_below" else 1
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise InvalidArgumentError(
                f"ann_index_config {name} must be an integer >= {low}, got {v!r}"
            )
