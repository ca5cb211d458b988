"""The lexical side of hybrid search on Postgres: the statement ranking a search's candidates by
their ``tsvector`` and the word statistics it reads (the ``tsv`` of rows written before the store
was hybrid is filled by :mod:`~langmem_adapters.postgres.backfill`).

Each vector row (one per indexed text of an item) keeps ``tsv = to_tsvector(text_config, text)``
beside its embedding, under a GIN index that also holds the row's namespace labels
(``schema.lexical_words``), so that a search under a prefix reads a word's rows under it only. A
query's text is parsed by the same configuration (``to_tsvector``, so identifiers, paths and e-mail
addresses come out as the same lexemes as in the stored texts) and each lexeme is a term. A term is weighted by its rarity, BM25's inverse document
frequency ``ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``df`` the number of vector rows holding it
and ``N`` the table's rows. A common word's ``df`` is its share of the rows in the table's ANALYZE
statistics, copied by :func:`terms_refresh` into a keyed table; any other word's is counted on the
GIN index. A table not analyzed since it was created or truncated is counted instead (``N`` and
every ``df``): its statistics, if any, describe rows that are gone. The query's stop words
(``core.hybrid.STOP_WORDS``) are left out. Only the terms held by at most
``HybridSpec.rare_bound(N, page)`` rows (``rare_share``, 2% by default, or no more than the page's
end) **select** candidate rows through the GIN index; every other term only adds its weight to the
rows they selected, tested through the index on the rows holding a selecting word: so no search
reads the posting list of a common word (at most ``bound + 1`` of its entries, to count it, when
ANALYZE did not record it), the cost of the lexical side is bounded by the rarer words' rows, and
a query of common words only has no lexical side. A selecting word's rows are read once, when it
is counted, and its rows under the prefix kept for scoring (not looked up again per word). An
item's lexical score is the sum of the weights of the terms any of its texts holds (BM25 with term
frequency and length left out: memories are short; measured on LongMemEval, fused with the vector
side, as good as full BM25, see docs/hybrid.md). The statement returns up to ``depth`` times the
page of candidates, by key with their scores (which set the fusion's scale) and, under the
information fusion, their distance to the query vector and the query's IDF mass (the weights of all
its terms, what that fusion's scores are a share of); those ranked around the page come with
their items (:func:`valued`), so that a hybrid search needs a second round only for a page item
neither side read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.hybrid import STOP_WORDS, HybridSpec, clean_query, query_words
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres import sql
from langmem_adapters.postgres.schema import Tables, lexical_words, ns_words
from langmem_adapters.postgres.sql import DISTANCE_OPERATOR, LIVE, Statement

__all__ = [
    "EXACT_SIZE",
    "SETTINGS",
    "lexical_search",
    "lexical_settings",
    "namespace_shares",
    "prefix_query",
    "riding",
    "terms_refresh",
    "valued",
    "vector_op",
    "vector_rows",
]

#: The most rows a search counts to size a table that has no statistics yet (new, or truncated
#: since it was last analyzed): autovacuum analyzes such a table within about a minute of its
#: first 50 writes, so counting only bridges that time; a count at the cap stands for "at least".
EXACT_SIZE = 20_000

#: What the lexical statement is planned with: one kept generic plan (its plan depends on the terms'
#: counts, found at run time, not on its parameters; planning it costs ~1 ms, running it ~0.2 ms),
#: sorts allowed (a vector statement before it in the round may have disallowed them), and index
#: scans rather than a scan of the vector table.
SETTINGS = (
    "set_config('plan_cache_mode', 'force_generic_plan', true) || "
    "set_config('enable_sort', 'on', true) || set_config('enable_seqscan', 'off', true)"
)

#: A namespace word (``schema.ns_words``) more than this share of the rows hold is left out of the
#: index lookups (the search's namespace condition filters the rows anyway): intersecting a word's
#: rows with a posting list of nearly every row costs more than it saves (docs/hybrid.md). Any
#: value gives the same results.
NS_SHARE = 0.5


def prefix_query(prefix: Sequence[str], shares: Mapping[str, float]) -> str | None:
    """The words of the namespace ``prefix`` (``schema.ns_words``) the index is asked for, as a
    tsquery's text: those at most ``NS_SHARE`` of the rows hold by ``shares``
    (``PostgresStats.namespace_shares``; a word it lacks is rarer than any it holds), or ``None``
    (an empty prefix, or one most rows are under)."""
    words = [w for w in ns_words(nsp.join(prefix)) if shares.get(w, 0.0) <= NS_SHARE]
    return " & ".join(_quoted(w) for w in words) or None


def _quoted(lexeme: str) -> str:
    """``lexeme`` as a tsquery operand (the Python of ``_OPERAND``)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def namespace_shares(t: Tables, spec: IndexSpec) -> Statement:
    """The namespace words in the copy of the word statistics (:func:`terms_refresh`) and the share
    of the rows holding each: ``(word, share)`` rows."""
    return Statement(
        f"SELECT lex, f FROM {t.terms} WHERE tbl = %s AND left(lex, 1) = ' '", [t.vectors(spec)]
    )


# A lexeme as a tsquery operand: quoted, with quotes and backslashes doubled (tsquery's own escape).
_OPERAND = "(chr(39) || replace(replace(a.lex, chr(92), chr(92) || chr(92)), chr(39), chr(39) || chr(39)) || chr(39))::tsquery"


def lexical_search(
    t: Tables,
    spec: IndexSpec,
    hybrid: HybridSpec,
    op: SearchOp,
    conditions: tuple[Condition, ...],
    candidates: int,
    qvec: str | None = None,
    prefix_words: str | None = None,
) -> Statement:
    """The best ``candidates`` live items under the prefix that pass the filters, by lexical score
    (best first, then namespace and key): ``fusion.LexicalRow``s, each row's namespace, key and
    score, for the ``information`` fusion the item's distance to the query vector ``qvec`` and the
    query's IDF mass (the same on every row), and the item's other columns (its value only for
    those ranked within :func:`valued`). ``prefix_words`` (:func:`prefix_query`) narrows the
    index's lookups to the rows under the prefix. Sent after :func:`lexical_settings` or a
    statement :func:`riding` them. The floor is applied by the fusion: the best item is the first
    row."""
    vt = t.vectors(spec)
    page = op.offset + op.limit
    first, last = valued(op.offset, op.limit)
    ns_sql, ns_params = sql.ns_condition("v.ns", op.namespace_prefix, estimable=True)
    f_sql, f_params = sql.filter_sql(conditions, "i.value")
    distance: list[str] = []
    information = ", NULL::float8, NULL::float8"  # no distance nor mass for the other fusions
    if hybrid.fusion == "information":
        assert qvec is not None, "the information fusion needs the query vector"
        distance, information = [qvec], _distance_sql(vt, spec) + _MASS
    return Statement(
        f"WITH size AS MATERIALIZED ({_size_sql(vt)}), "
        f"{_counted_sql(t, vt, hybrid.text_config, ns_sql, _stops(op.query or ''))}, "
        f"terms AS MATERIALIZED (SELECT u.i, u.q, u.df <= z.bound AS selects, "
        f"{_INFORMATION if hybrid.fusion == 'information' else _IDF} AS w, "
        "u.nss, u.keys FROM counted u, size z WHERE u.df > 0), "
        f"{_hits_sql(vt, ns_sql)} "
        # Each hit's item by its primary key, best hits first, until ``candidates`` items pass
        # the filters ("OFFSET 0" keeps the lookup a nested loop: the kept generic plan would
        # otherwise hash-join the hits with a scan of every item; the hits sorted first, so the
        # items of the other hits, hundreds where a query's words are ordinary, are not read).
        # Those ranked within ``valued`` come with their values (a value not output is not read).
        f"SELECT x.ns, x.key, x.score{information}, CASE WHEN x.n BETWEEN {first} AND {last} THEN "
        "x.value END, x.created_at, x.updated_at, x.ttl_minutes FROM (SELECT h.ns, h.key, "
        "h.score, s.*, row_number() OVER (ORDER BY h.score DESC, h.ns, h.key) AS n FROM "
        "(SELECT * FROM hits ORDER BY score DESC, ns, key) h CROSS JOIN LATERAL (SELECT "
        f"{_VALUE_COLUMNS} FROM {t.store} i WHERE i.ns = h.ns AND i.key = h.key "
        f"AND {LIVE.format(a='i')} AND {f_sql} OFFSET 0) s LIMIT {int(candidates)}) x "
        "ORDER BY x.n",
        [
            page,
            hybrid.rare_share,
            prefix_words,
            clean_query(op.query or ""),
            *ns_params,  # the prefix's condition, in the counted and the hits CTEs
            *ns_params,
            *distance,  # the query vector, in the distance column
            *f_params,
        ],
    )


def valued(offset: int, limit: int) -> tuple[int, int]:
    """The lexical ranks (first and last, from 1) whose candidates come with their items, for the
    page ``[offset, offset + limit)``: from a page before its start to half a page past its end.
    The fused first page held only items of the vector side's page and of the lexical side's best
    10 / 15 / 20 (a page of 10) on 62% / 88% / 93% of LongMemEval's questions across the
    collection (77% / 97% / 98% in a namespace) and 51% / 83% / 89% of LoCoMo's (64% / 85% /
    90%); any other item of the page is read in one more round (docs/hybrid.md). A deeper page
    reads the values around it only (the lexical side returns every candidate up to its end)."""
    return max(1, offset - limit + 1), offset + limit + limit // 2


# The columns of a lexical candidate's item but its key (``ITEM_COLUMNS``' others).
_VALUE_COLUMNS = "i.value, i.created_at, i.updated_at, i.ttl_minutes"


# The information fusion's ``mass`` column: the IDF sum of every query word the statement weighed
# (``core.information``: what a candidate's score is a share of).
_MASS = ", (SELECT sum(t.w) FROM terms t) AS mass"


def _distance_sql(vt: str, spec: IndexSpec) -> str:
    """The column of a lexical row's distance to the query vector (parameter): its item's nearest
    vector row's, an index lookup by key per candidate (+7% of a LongMemEval search,
    docs/hybrid.md)."""
    return (
        f", (SELECT min(w.embedding {DISTANCE_OPERATOR[spec.distance]} %s::{spec.vector_type}) "
        f"FROM {vt} w WHERE w.ns = x.ns AND w.key = x.key) AS distance"
    )


# A term's weight: BM25's inverse document frequency (``u.df`` rows of ``z.n`` hold it); under the
# information fusion its information ``ln(N / df)`` (``core.information.idf``).
_IDF = "ln(1 + (greatest(z.n, u.df) - u.df + 0.5) / (u.df + 0.5))"
_INFORMATION = "ln(greatest(z.n, u.df) / u.df)"


def _size_sql(vt: str) -> str:
    """The ``size`` row: ``n`` (the vector table's rows), ``known`` (analyzed since it was last
    emptied), ``bound`` (``HybridSpec.rare_bound(n, page)``) and ``nsq``, the words of the search's
    prefix the index is asked for (:func:`prefix_query`; NULL: none); parameters: the page's end,
    the rare share, ``nsq``. A table analyzed since it was last emptied (``reltuples`` > 0) is
    sized by the planner's estimate or the live rows the statistics system counted, whichever is
    larger; its common words' shares come from ``t.terms`` (:func:`terms_refresh`). Any other
    table (new, or truncated: its statistics describe rows that are gone, its live count lags) is
    counted, up to EXACT_SIZE rows, and so is every word: exact while young and small."""
    return (
        "SELECT z.n, z.known, greatest(1, %s::float8, floor(%s * z.n))::bigint AS bound, "
        "%s::tsquery AS nsq FROM "
        "(SELECT c.reltuples > 0 AS known, CASE WHEN c.reltuples > 0 THEN "
        "greatest(c.reltuples, pg_stat_get_live_tuples(c.oid), 1) ELSE greatest(1, (SELECT "
        f"count(*) FROM (SELECT 1 FROM {vt} LIMIT {EXACT_SIZE}) x)) END::float8 AS n "
        f"FROM pg_class c WHERE c.oid = '{vt}'::regclass) z"
    )


def _lexemes_sql(text_config: str, stops: bool) -> str:
    """The query's lexemes (``lex``), their order (``i``) and each as a ``tsquery`` (``q``), with
    ``stops`` the stop words aside (parameter: the query text). The stop words are part of the
    text, not a parameter: sending and parsing the list cost 0.13 ms of a 1.0-1.7 ms lexical
    statement on LongMemEval (docs/hybrid.md)."""
    return (
        f"SELECT a.lex, a.i, {_OPERAND} AS q FROM unnest(tsvector_to_array("
        f"{sql.tsvector_sql(text_config, '%s')})) WITH ORDINALITY AS a(lex, i)"
        + (f" WHERE a.lex <> ALL ({_STOP_WORDS_SQL})" if stops else "")
    )


# ``STOP_WORDS`` as a text[] literal (plain lowercase words: nothing to quote, as
# ``test_hybrid_core`` checks). This form keeps the statement under 4,096 characters, the longest
# whose parsing psycopg caches: the ARRAY[...] form took it to 4,099, and parsing it again cost
# 29 us a search (docs/hybrid.md).
_STOP_WORDS_SQL = "'{" + ",".join(sorted(STOP_WORDS)) + "}'::text[]"


def _counted_sql(t: Tables, vt: str, text_config: str, x_sql: str, stops: bool) -> str:
    """The ``counted`` CTE: each query lexeme's document frequency ``df`` and, for a word that may
    select candidates, the keys of its rows under the prefix (``nss``, ``keys``): a common
    lexeme's ``df`` by its recorded share (:func:`terms_refresh`; the copy's '' row is no lexeme:
    a tsvector holds none empty), any other counted on the index, up to one past the bound (past
    it, a word only adds to the scores of the candidates the rarer words select, and its weight
    is that of a word just past the bound). A less common word's rows are read once, both to count
    it and to score them."""
    return (
        "counted AS MATERIALIZED (SELECT u.i, u.q, coalesce(u.known, c.n)::float8 AS df, "
        f"c.nss, c.keys FROM (SELECT a.*, (SELECT greatest(1, s.f * z.n) FROM {t.terms} s "
        f"WHERE z.known AND s.tbl = '{vt}' AND s.lex = a.lex) AS known "
        f"FROM ({_lexemes_sql(text_config, stops)}) a, size z OFFSET 0) u CROSS JOIN size z "
        "CROSS JOIN LATERAL (SELECT count(*) AS n, array_agg(x.ns) FILTER (WHERE x.inside) AS "
        "nss, array_agg(x.key) FILTER (WHERE x.inside) AS keys FROM (SELECT v.ns, v.key, "
        f"{x_sql} AS inside FROM {vt} v WHERE coalesce(u.known <= z.bound, TRUE) "
        f"AND {lexical_words('v')} @@ CASE WHEN u.known IS NULL OR z.nsq IS NULL THEN u.q "
        "ELSE u.q && z.nsq END LIMIT CASE WHEN u.known IS NULL THEN z.bound + 1 END) x) c)"
    )


def _hits_sql(vt: str, v_sql: str) -> str:
    """The ``hits`` CTE: each item under the prefix holding a selecting (less common) word, scored
    by the sum of the weights of the words its rows hold (a word counts once per item). A
    selecting word's rows under the prefix were kept when it was counted; every other word is
    tested through the index on the rows holding a selecting word (those words OR-ed into one
    ``tsquery``), so its posting list is never read whole. (Reading the found rows' ``tsv``
    instead, a 2,000-character text's is stored compressed, was 2.5x slower on LongMemEval.) The
    index is asked for those rows under the search's prefix only (``nsq``, when the prefix is not
    most of the table), so a namespace search does not read the other namespaces' rows."""
    words = lexical_words("v")
    return (
        "hits AS (SELECT m.ns, m.key, sum(m.w) AS score FROM (SELECT DISTINCT * FROM "
        "(SELECT r.ns, r.key, s.i, s.w FROM terms s CROSS JOIN LATERAL unnest(s.nss, s.keys) "
        "r(ns, key) WHERE s.selects UNION ALL SELECT v.ns, v.key, c.i, c.w FROM terms c "
        f"CROSS JOIN size z CROSS JOIN LATERAL (SELECT v.ns, v.key FROM {vt} v WHERE {words} @@ "
        f"CASE WHEN z.nsq IS NULL THEN c.q ELSE c.q && z.nsq END AND {words} @@ "
        "(SELECT string_agg(o.q::text, ' | ')::tsquery FROM terms o WHERE o.selects) "
        f"AND {v_sql} OFFSET 0) v WHERE NOT c.selects) a) m GROUP BY m.ns, m.key)"
    )


def _stops(query: str) -> bool:
    """Whether the lexical statement leaves ``STOP_WORDS`` out of ``query``'s lexemes: unless the
    query has no other word (``core.hybrid.query_words``)."""
    kept = query_words(query)
    return not (kept and kept[0] in STOP_WORDS)


def lexical_settings() -> Statement:
    """The statement setting what the lexical statement sent next is planned with (``SETTINGS``)."""
    return Statement(f"SELECT {SETTINGS}")


def riding(vector: Statement) -> Statement:
    """``vector`` (a vector search's page: rows ``ns``, ``key``, ..., ``d``) also setting what the
    lexical statement sent after it is planned with: a one-time filter, evaluated before the first
    row is read, so the settings need no statement of their own (~0.05 ms of a ~1.2 ms search);
    the page's order said again outside it (SQL keeps no subquery's order)."""
    ride = f"SELECT * FROM ({vector.sql}) AS ride WHERE (SELECT {SETTINGS}) IS NOT NULL"
    return Statement(f"{ride} ORDER BY ride.d, ride.ns, ride.key", vector.params, vector.fetch)


def terms_refresh(t: Tables, spec: IndexSpec) -> Statement:
    """Copy the vector table's common words and the share of its rows holding each (ANALYZE's
    ``most_common_elems`` of ``tsv``, and of its lexical index for the namespaces' words,
    ``schema.ns_words``) into ``t.terms``, unless the copy is of its latest ANALYZE already: one
    statement that a hybrid store's searches send about once a minute, so that the
    lexical side looks each query word up by key instead of reading and scanning the statistics
    array (measured 0.25 ms of a 0.5 ms lexical statement at 10k rows). Under a try-lock, so
    concurrent stores copy once; any failure (a read-only server, say) leaves the old copy, which
    searches then keep using: the refresh must never fail a search."""
    vt = t.vectors(spec)
    at = (
        f"greatest(pg_stat_get_last_analyze_time('{vt}'::regclass), "
        f"pg_stat_get_last_autoanalyze_time('{vt}'::regclass))"
    )
    return Statement(
        f"""DO $$
        DECLARE at float8;
        BEGIN
            at := extract(epoch FROM {at});
            IF at IS NULL OR EXISTS (SELECT 1 FROM {t.terms} WHERE tbl = '{vt}' AND lex = ''
                                     AND f = at)
               OR NOT pg_try_advisory_xact_lock(hashtext('{t.terms}'), hashtext('{vt}')) THEN
                RETURN;
            END IF;
            DELETE FROM {t.terms} WHERE tbl = '{vt}';
            INSERT INTO {t.terms} (tbl, lex, f)
                SELECT '{vt}', s.e, s.f FROM pg_stats p, unnest(p.most_common_elems::text::text[],
                    p.most_common_elem_freqs) s(e, f)
                WHERE p.schemaname = current_schema() AND s.e IS NOT NULL AND s.e <> ''
                    AND (p.tablename = '{vt}' AND p.attname = 'tsv'
                         OR p.tablename = '{vt}_lex_idx' AND left(s.e, 1) = ' ')
                UNION ALL SELECT '{vt}', '', at;
        EXCEPTION WHEN OTHERS THEN
            RETURN;
        END $$""",
        fetch=False,
    )


def vector_op(spec: IndexSpec, op: SearchOp) -> SearchOp:
    """The search the vector side runs: ``op`` itself, or for a hybrid store the items up to the
    page's end (fused with the lexical side's, then paged): as wide as a vector-only search, so
    the vector side costs what a vector search does."""
    if spec.hybrid is None:
        return op
    return op._replace(offset=0, limit=op.offset + op.limit)


def vector_rows(spec: IndexSpec, vop: SearchOp) -> int:
    """How many vector rows an ANN search (or a prefix's exact scan) reads for the items of
    ``vop``: twice the items per indexed field (items with several vectors, or expired ones, are
    pooled out)."""
    return max(20, 2 * (vop.offset + vop.limit) * len(spec.fields))
