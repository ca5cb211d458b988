"""The benchmark's summary: each run's two stores are measured side by side, so it reports the median
of the runs' ratios, not a ratio of medians taken from different runs."""

from pathlib import Path

import pytest

from benchmarks import bench_postgres as bench


def test_summary_ratio_is_the_median_of_each_runs_ratio() -> None:
    runs: list[bench.Results] = [
        {"get": {"ours": 10.0, "official": 2.0}},  # 5x
        {"get": {"ours": 4.0, "official": 1.0}},  # 4x, a slow run for both
        {"get": {"ours": 30.0, "official": 10.0}},  # 3x
    ]
    rows = bench.table_rows(bench.median_results(runs), {}, bench.median_ratios(runs))
    assert rows[0]["ours"] == 10.0 and rows[0]["official"] == 2.0  # medians per store
    assert rows[0]["ratio"] == 4.0  # not 10 / 2
    assert bench.table_rows(bench.median_results(runs), {})[0]["ratio"] == 5.0


# --------------------------------------------------------------------------- vector data sets


def test_prose_sentences_keep_english_sentences_only() -> None:
    from benchmarks.datasets import prose_sentences

    doc = (
        "Return the parsed value. Short.\n\n"
        "Example::\n\n    x = f(1)\n\n"
        ">>> f(1)\n1\n\n"
        "lower-case paragraphs are field lists or code.\n\n"
        "Args:\n    x: the input, which is a value.\n\n"
        "Raises an error when the\n    input is {[(**)]}//:: not valid."
    )
    assert list(prose_sentences(doc)) == ["Return the parsed value."]


def test_precomputed_embeddings_look_up_items_and_queries() -> None:
    import numpy as np

    from benchmarks.datasets import PrecomputedEmbeddings, VectorSet

    rng = np.random.default_rng(1)
    data = VectorSet("random", rng.standard_normal((5, 4)), rng.standard_normal((2, 4)))
    emb = PrecomputedEmbeddings(data)
    assert np.allclose(emb.embed_documents(["m3", "q1"]), [data.vectors[3], data.queries[1]])
    assert np.allclose(emb.embed_query("q0"), data.queries[0])
    # Other texts (identity probes) get a vector of the right size, the same one every time.
    probe = emb.embed_query("The quick brown fox")
    assert len(probe) == 4 and probe == emb.embed_query("The quick brown fox")
    assert probe != emb.embed_query("another text")
    # Exact scores are cosines whatever the vectors' lengths.
    q = data.queries[1]
    want = data.vectors @ q / np.linalg.norm(data.vectors, axis=1) / np.linalg.norm(q)
    assert np.allclose(data.scores(1), want)


def test_random_sets_are_cached_and_prefixes_of_larger_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from benchmarks import datasets

    monkeypatch.setattr(datasets, "CACHE_DIR", str(tmp_path))
    small, big = datasets.load_set("random", 30, 4), datasets.load_set("random", 100, 4)
    assert small.vectors.shape == (30, 256) and small.queries.shape == (4, 256)
    assert np.array_equal(small.vectors, big.vectors[:30])
    assert np.array_equal(small.queries, big.queries)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "random-100-256-s7.npy",
        "random-30-256-s7.npy",
        "random-q4-256-s7.npy",
    ]
    assert np.array_equal(datasets.load_set("random", 30, 4).vectors, small.vectors)


def test_vector_benchmark_searches_the_namespace_its_items_are_put_in() -> None:
    import numpy as np

    from benchmarks import bench_vectors as bv
    from benchmarks.datasets import VectorSet

    n = 2 * bv.LOAD_BATCH + 7
    data = VectorSet("random", np.zeros((n, 2)), np.zeros((60, 2)))
    ops = [op for batch in bv.puts(data) for op in batch]
    assert [op.key for op in ops] == [f"m{i}" for i in range(n)]
    for q in (0, 7, 59):
        rows = bv.candidates("ns", q, n)
        assert {ops[i].namespace for i in rows} == {bv.prefix_of("ns", q)}
        outside = set(range(n)) - set(rows.tolist())
        assert all(ops[i].namespace != bv.prefix_of("ns", q) for i in outside)
    assert len(bv.candidates("global", 3, n)) == n
    assert all(op.namespace[:1] == bv.prefix_of("global", 0) for op in ops)


# --------------------------------------------------------------------------- the second embedder


def test_glove_text_vector_is_the_unit_mean_of_its_known_words() -> None:
    import numpy as np

    from benchmarks.glove_embeddings import DIMS, NO_WORDS, GloveVectors

    rng = np.random.default_rng(2)
    table = rng.standard_normal((3, DIMS)).astype(np.float32)
    glove = GloveVectors(["cat", "sat", "mat"], table)
    got = glove.embed(["The CAT sat, zorblax!", "cat", "zorblax ???", ""])
    want = table[:2].astype(np.float64).mean(axis=0)
    assert np.allclose(got[0], want / np.linalg.norm(want))  # lowercased, unknown words skipped
    assert np.allclose(got[1], table[0] / np.linalg.norm(table[0]))
    # No known word: one fixed unit vector, not zeros (a zero vector's cosine is undefined).
    assert np.allclose(got[2], NO_WORDS) and np.allclose(got[3], NO_WORDS)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0)


def test_exact_share_counts_the_exact_top_10_and_items_tied_with_its_last() -> None:
    from benchmarks.bench_conversations import Baselines
    from benchmarks.bench_retrieval import Precomputed
    from benchmarks.longmemeval import Collection, Item, Question

    # 12 items: i0..i8 at decreasing cosines, i9 and i10 tied at the 10th cosine, i11 below.
    vecs = {f"t{n}": [1.0, 0.1 * n] for n in range(10)} | {"t10": [1.0, 0.9], "t11": [0.0, 1.0]}
    items = [Item(f"i{n}", ("x", "a"), f"s{n}", "2023/01/01", f"t{n}") for n in range(12)]
    q = Question("q", "kind", "query", "2023/01/02", frozenset({"s0"}), ("x", "a"))
    base = Baselines(Collection(items, [q]), Precomputed(None, vecs | {"query": [1.0, 0.0]}))  # type: ignore[arg-type]
    top = [f"i{n}" for n in range(10)]
    assert base.exact_share(q, "global", top) == 1.0
    assert base.exact_share(q, "global", [*top[:9], "i10"]) == 1.0  # tied with the 10th
    assert base.exact_share(q, "global", [*top[:9], "i11"]) == 0.9
    assert base.exact_share(q, "global", top[:5]) == 0.5


# --------------------------------------------------------------------------- the third embedder


def test_minilm_erf_is_the_error_function() -> None:
    import math

    import numpy as np

    from benchmarks.minilm_embeddings import _erf

    xs = np.linspace(-4.0, 4.0, 161)
    assert np.max(np.abs(_erf(xs) - np.array([math.erf(x) for x in xs]))) < 2e-7


def _tiny_minilm() -> object:
    """A two-layer, 24-wide BERT with random weights and a word-level tokenizer: the encoder's
    arithmetic without the 90 MB model."""
    import numpy as np
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    from benchmarks.minilm_embeddings import MiniLM

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    rng = np.random.default_rng(7)
    d, hidden = 24, 48
    w: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.standard_normal((len(vocab), d)),
        "embeddings.position_embeddings.weight": rng.standard_normal((64, d)),
        "embeddings.token_type_embeddings.weight": rng.standard_normal((2, d)),
        "embeddings.LayerNorm.weight": np.ones(d),
        "embeddings.LayerNorm.bias": np.zeros(d),
    }
    shapes = {
        "attention.self.query": (d, d),
        "attention.self.key": (d, d),
        "attention.self.value": (d, d),
        "attention.output.dense": (d, d),
        "intermediate.dense": (hidden, d),
        "output.dense": (d, hidden),
    }
    for n in range(2):
        for name, shape in shapes.items():
            w[f"encoder.layer.{n}.{name}.weight"] = rng.standard_normal(shape) / np.sqrt(shape[1])
            w[f"encoder.layer.{n}.{name}.bias"] = 0.1 * rng.standard_normal(shape[0])
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"encoder.layer.{n}.{norm}.weight"] = 1.0 + 0.1 * rng.standard_normal(d)
            w[f"encoder.layer.{n}.{norm}.bias"] = 0.1 * rng.standard_normal(d)
    return MiniLM({k: v.astype(np.float32) for k, v in w.items()}, tok)


def test_minilm_vector_of_a_text_does_not_depend_on_its_batch() -> None:
    import numpy as np

    model = _tiny_minilm()
    alone = model.embed(["a b"])  # type: ignore[attr-defined]
    # Batched with longer texts, "a b" is padded: the padding must be masked out of attention and
    # pooling, or its vector would move.
    batched = model.embed(["a b c d a b c d", "a b", "d c b a d"])  # type: ignore[attr-defined]
    assert batched.shape == (3, 24)
    assert np.allclose(batched[1], alone[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(batched[0], batched[2], atol=1e-3)  # word order matters (positions)


# --------------------------------------------------------------------------- the delay proxy


def test_delay_proxy_addresses_reach_the_same_server() -> None:
    from benchmarks.rtt_proxy import through, upstream_of

    assert upstream_of("postgresql://u:@/db?host=/tmp/pg") == "unix:/tmp/pg/.s.PGSQL.5432"
    assert upstream_of("host=db.example port=6432 dbname=x") == "db.example:6432"
    assert upstream_of("redis://127.0.0.1:7001/0") == "127.0.0.1:7001"
    assert upstream_of("unix:///tmp/redis.sock") == "unix:/tmp/redis.sock"
    assert through("redis://127.0.0.1:7001/2", 6500) == "redis://127.0.0.1:6500/2"
    dsn = through("postgresql://u:@/db?host=/tmp/pg", 6500)
    assert "host=127.0.0.1" in dsn and "port=6500" in dsn and "dbname=db" in dsn


def test_delay_proxy_adds_its_round_trip_time() -> None:
    """Through the proxy a round trip takes at least the ``rtt`` asked for, and the rows come back
    whole and in order."""
    import time

    import psycopg

    from benchmarks.rtt_proxy import delayed
    from tests import servers

    with delayed(servers.postgres_dsn(), 20.0) as dsn, psycopg.connect(dsn) as conn:
        conn.execute("SELECT 1")
        started = time.perf_counter()
        rows = conn.execute("SELECT g, repeat('x', 5000) FROM generate_series(1, 200) g").fetchall()
        took = time.perf_counter() - started
    assert [r[0] for r in rows] == list(range(1, 201)) and {len(r[1]) for r in rows} == {5000}
    assert took >= 0.020
