"""The ``langmem-adapters`` command, run in-process through ``main([...])`` on real servers.

Each test gets fresh databases on the test PostgreSQL, so stores never share state.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.postgres import PostgresStore as OfficialStore
from psycopg.conninfo import conninfo_to_dict

from langmem_adapters.demo import SCRIPTED_LABEL
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.postgres import PostgresStore
from tests import servers
from tests.cli.conftest import Run

NewDB = Callable[[], str]


@contextlib.contextmanager
def _databases() -> Iterator[NewDB]:
    """Factory of fresh, empty databases on the test server (``postgresql://`` URLs); dropped after."""
    base = servers.postgres_dsn()
    made: list[str] = []

    def factory() -> str:
        name = f"cli_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        made.append(name)
        params = conninfo_to_dict(base)
        host = params.get("host", "localhost")
        auth = params.get("user", "postgres") + (
            f":{params['password']}" if params.get("password") else ""
        )
        port = params.get("port", "5432")
        if str(host).startswith("/"):
            return f"postgresql://{auth}@/{name}?host={host}&port={port}"
        return f"postgresql://{auth}@{host}:{port}/{name}"

    try:
        yield factory
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            for name in made:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def new_db() -> Iterator[NewDB]:
    """Fresh databases for one test."""
    with _databases() as factory:
        yield factory


def _fill(url: str, n: int = 6) -> None:
    """A few items in two namespaces, one with a TTL, with distinct old timestamps."""
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        for i in range(n):
            ns = ("users", "ada") if i % 2 else ("users", "bob", "notes")
            store.put(
                ns,
                f"k{i}",
                {"text": f"note {i} about tea ünïcode", "n": i, "nested": {"tags": ["a", i]}},
            )
        store.put(("users", "ada"), "temp", {"text": "short-lived"}, ttl=60)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE langmem_store SET created_at = now() - interval '3 days' + length(value::text) * interval '1 ms', "
            "updated_at = now() - interval '1 day'"
        )


def _export(run: Run, url: str, path: Path) -> list[dict[str, Any]]:
    code, _, err = run("-q", "export", url, "--output", str(path))
    assert code == 0, err
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --------------------------------------------------------------------------- demo


def test_demo_runs_offline_on_an_embedded_server(run: Run, tmp_path: Path) -> None:
    code, out, err = run("demo", "--store", f"embedded:{tmp_path / 'pg'}")
    assert code == 0, err
    assert SCRIPTED_LABEL in out
    for expected in (
        "stored:",
        "recalled:",
        "corrected:",
        "recalled as of",
        "lived in Paris",
        "superseded",
    ):
        assert expected in out, expected
    # A second run starts from a clean slate: same story, no leftovers from the first.
    code, again, _ = run("demo", "--store", f"embedded:{tmp_path / 'pg'}")
    assert code == 0
    assert again.count("superseded") == out.count("superseded")


def test_demo_with_an_unknown_model_provider_is_one_error_line(run: Run, new_db: NewDB) -> None:
    code, _, err = run("demo", "--store", new_db(), "--model", "nosuchprovider:model")
    assert code == 1
    assert err.startswith("error: cannot use model") and err.count("\n") == 1


# --------------------------------------------------------------------------- inspect


def test_inspect_tree_items_search_and_json(run: Run, new_db: NewDB) -> None:
    url = new_db()
    _fill(url)
    code, out, _ = run("inspect", url)
    assert code == 0
    assert "7 item(s) in 2 namespace(s)" in out
    assert "users (7)" in out and "ada (4)" in out and "notes (3)" in out

    code, out, _ = run("inspect", url, "--json")
    tree = json.loads(out)
    assert tree["total"] == 7
    assert {(tuple(n["namespace"]), n["items"]) for n in tree["namespaces"]} == {
        (("users", "ada"), 4),
        (("users", "bob", "notes"), 3),
    }

    code, out, _ = run("inspect", url, "-n", "users.ada", "--json")
    listing = json.loads(out)
    assert listing["total"] == 4 and len(listing["items"]) == 4
    assert all(item["namespace"] == ["users", "ada"] for item in listing["items"])

    code, out, _ = run(
        "inspect", url, "-n", '["users","bob"]', "--filter", '{"n": {"$gte": 2}}', "--json"
    )
    assert sorted(item["key"] for item in json.loads(out)["items"]) == ["k2", "k4"]

    code, out, _ = run("inspect", url, "-n", "users.ada", "--filter", '{"n": 3}')
    assert code == 0 and "k3" in out and "k1" not in out


def test_inspect_query_ranks_with_the_matching_embedder(run: Run, new_db: NewDB) -> None:
    url = new_db()
    index = {"dims": 32, "embed": HashEmbeddings(32), "fields": ["text"]}
    with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.put(("docs",), "tea", {"text": "green tea is my favourite drink"})
        store.put(("docs",), "bike", {"text": "the bicycle needs new tyres"})
    code, out, _ = run(
        "inspect", url, "--query", "favourite tea drink", "--embed", "hash:32", "--json"
    )
    assert code == 0
    items = json.loads(out)["items"]
    assert [i["key"] for i in items] == ["tea", "bike"]
    assert items[0]["score"] > items[1]["score"]


# --------------------------------------------------------------------------- export / import


def test_export_import_round_trip_is_lossless(run: Run, new_db: NewDB, tmp_path: Path) -> None:
    source, target = new_db(), new_db()
    _fill(source)
    first = _export(run, source, tmp_path / "a.jsonl")
    assert len(first) == 7
    temp = next(r for r in first if r["key"] == "temp")
    assert temp["ttl_minutes"] == 60.0 and temp["expires_at"] is not None

    code, _, err = run("import", target, "--input", str(tmp_path / "a.jsonl"), "--embed", "hash:16")
    assert code == 0, err
    second = _export(run, target, tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert second == first
    # The target has vectors for its index: a query is ranked.
    code, out, _ = run(
        "inspect", target, "--query", "note about tea", "--embed", "hash:16", "--json"
    )
    assert all(item.get("score") is not None for item in json.loads(out)["items"])


def test_import_from_stdin_and_bad_lines(
    run: Run, new_db: NewDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    url = new_db()
    now = datetime.now(timezone.utc).isoformat()
    good = json.dumps(
        {"namespace": ["a"], "key": "k", "value": {"x": 1}, "created_at": now, "updated_at": now}
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(good + "\n\n"))
    code, _, err = run("import", url)
    assert code == 0 and "imported 1 item(s)" in err

    monkeypatch.setattr("sys.stdin", io.StringIO(good + "\n{not json\n"))
    code, _, err = run("-q", "import", url)
    assert code == 1 and err.strip().splitlines() == [
        "error: line 2: not valid JSON (Expecting property name enclosed in double quotes)"
    ]


# --------------------------------------------------------------------------- migrate


def test_migrate_between_our_stores(run: Run, new_db: NewDB, tmp_path: Path) -> None:
    source, target = new_db(), new_db()
    _fill(source)
    checkpoint = tmp_path / "ck.json"
    code, _, err = run("migrate", "--from", source, "--to", target, "--checkpoint", str(checkpoint))
    assert code == 0, err
    assert "migrated 7 item(s)" in err and not checkpoint.exists()
    assert _export(run, source, tmp_path / "s.jsonl") == _export(run, target, tmp_path / "t.jsonl")


def test_migrate_from_the_official_postgres_store(run: Run, new_db: NewDB, tmp_path: Path) -> None:
    source, target = new_db(), new_db()
    with OfficialStore.from_conn_string(source) as official:
        official.setup()
        official.put(("users", "ada"), "tea", {"text": "Ada prefers green tea"})
        official.put(("users", "ada"), "city", {"text": "Ada lives in Berlin"})
        official.put(("users", "bob"), "tmp", {"text": "temporary"}, ttl=30)
        stored = {(tuple(i.namespace), i.key): i for i in official.search(("users",), limit=10)}
    code, _, err = run(
        "migrate",
        "--from",
        f"official+{source}",
        "--to",
        target,
        "--embed",
        "hash:16",
        "--checkpoint",
        str(tmp_path / "ck.json"),
    )
    assert code == 0, err
    rows = _export(run, target, tmp_path / "t.jsonl")
    assert len(rows) == 3
    for row in rows:
        original = stored[(tuple(row["namespace"]), row["key"])]
        assert row["value"] == original.value
        assert datetime.fromisoformat(row["created_at"]) == original.created_at
        assert datetime.fromisoformat(row["updated_at"]) == original.updated_at
    assert next(r for r in rows if r["key"] == "tmp")["ttl_minutes"] == 30.0
    code, out, _ = run("inspect", target, "--query", "green tea", "--embed", "hash:16", "--json")
    assert json.loads(out)["items"][0]["key"] == "tea"


def test_migrate_resumes_after_an_interruption_without_duplicates(
    run: Run, new_db: NewDB, tmp_path: Path
) -> None:
    source, target = new_db(), new_db()
    with PostgresStore.from_conn_string(source) as store:
        store.setup()
        store.batch([_put(("bulk", str(i % 3)), f"item-{i:03d}", {"i": i}) for i in range(25)])
    checkpoint = tmp_path / "ck.json"
    args = [
        "migrate",
        "--from",
        source,
        "--to",
        target,
        "--checkpoint",
        str(checkpoint),
        "--batch-size",
        "10",
    ]
    code, _, err = run(*args, "--limit", "12")
    assert code == 0, err
    assert "stopped after 12 item(s)" in err and checkpoint.exists()
    assert json.loads(checkpoint.read_text())["copied"] == 12
    with psycopg.connect(target) as conn:
        assert conn.execute("SELECT count(*) FROM langmem_store").fetchone() == (12,)

    code, _, err = run(*args)
    assert code == 0, err
    assert "resuming after 12 item(s)" in err and "migrated 25 item(s)" in err
    assert not checkpoint.exists()
    with psycopg.connect(target) as conn:
        assert conn.execute(
            "SELECT count(*), count(DISTINCT (ns, key)) FROM langmem_store"
        ).fetchone() == (25, 25)
    assert _export(run, source, tmp_path / "s.jsonl") == _export(run, target, tmp_path / "t.jsonl")


def _put(ns: tuple[str, ...], key: str, value: dict[str, Any]) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(ns, key, value)


# --------------------------------------------------------------------------- sweep


def test_sweep_reports_how_many_expired_items_went(run: Run, new_db: NewDB) -> None:
    url = new_db()
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        store.put(("s",), "keep", {"x": 1})
        store.put(("s",), "a", {"x": 2}, ttl=10)
        store.put(("s",), "b", {"x": 3}, ttl=10)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE langmem_store SET expires_at = now() - interval '1 minute' WHERE ttl_minutes IS NOT NULL"
        )
    code, out, _ = run("sweep", url, "--json")
    assert code == 0 and json.loads(out)["removed"] == 2
    code, out, _ = run("sweep", url)
    assert code == 0 and "removed 0 expired item(s)" in out


# --------------------------------------------------------------------------- purge


class _Tty(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _purge_db(new_db: NewDB) -> str:
    url = new_db()
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        for ns in [
            ("users", "ada"),
            ("users", "ada", "notes"),
            ("users", "adam"),
            ("users", "ada_"),
        ]:
            store.put(ns, "k", {"x": 1})
    return url


def _left(url: str) -> list[tuple[str, ...]]:
    with PostgresStore.from_conn_string(url) as store:
        return sorted(store.list_namespaces())


def test_purge_asks_then_deletes_whole_labels_only(
    run: Run, new_db: NewDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _purge_db(new_db)
    monkeypatch.setattr("sys.stdin", _Tty("n\n"))
    code, out, err = run("purge", url, "-n", "users.ada")
    assert code == 1 and "delete 2 item(s) in 'users.ada'" in err and "nothing was deleted" in err
    assert len(_left(url)) == 4
    monkeypatch.setattr("sys.stdin", _Tty("yes\n"))
    code, out, err = run("purge", url, "-n", "users.ada")
    assert code == 0, err
    assert "removed 2 item(s) in users.ada" in out
    assert _left(url) == [("users", "ada_"), ("users", "adam")]


def test_purge_without_a_tty_needs_yes(run: Run, new_db: NewDB) -> None:
    url = _purge_db(new_db)
    code, out, err = run("purge", url, "-n", "users.ada")  # pytest's stdin is not a terminal
    assert code == 2 and "refusing to purge 'users.ada' without confirmation" in err
    assert len(_left(url)) == 4
    code, out, err = run("purge", url, "-n", '["users", "adam"]', "--yes", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["namespace"], report["removed"]) == (["users", "adam"], 1)
    assert ("users", "adam") not in _left(url)
    code, out, err = run("purge", url, "--yes")
    assert code == 2 and "--namespace" in err


def test_purge_on_redis(run: Run) -> None:
    url = _redis(True)
    code, out, err = run("import", url, "--input", "/dev/null")
    assert code == 0, err
    from langmem_adapters.cli.locations import open_store
    from langmem_adapters.settings import parse_location

    with open_store(parse_location(url)) as store:
        store.put(("t", "a"), "k", {"x": 1})
        store.put(("t", "ab"), "k", {"x": 1})
    code, out, err = run("purge", url, "-n", "t.a", "--yes")
    assert code == 0 and "removed 1 item(s) in t.a" in out, err
    with open_store(parse_location(url)) as store:
        assert store.list_namespaces() == [("t", "ab")]


# --------------------------------------------------------------------------- user mistakes


@pytest.fixture(scope="module")
def mistake_dbs() -> Iterator[tuple[str, str]]:
    """A filled and an empty database shared by the user-mistake cases (they change nothing)."""
    with _databases() as factory:
        db, empty = factory(), factory()
        _fill(db, 2)
        yield db, empty


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["inspect", "mysql://localhost/x"], 2, "unsupported store URL"),
        (["inspect", "postgresql://localhost:1/x"], 1, "cannot reach PostgreSQL"),
        (["inspect", "redis://localhost:1/0"], 1, "Redis"),
        (["inspect", "{db}", "--filter", "{bad json"], 2, "--filter is not valid JSON"),
        (["inspect", "{db}", "--filter", '{"n": {"$nope": 1}}'], 2, "unknown filter operator"),
        (
            ["inspect", "{db}", "-n", "no.such.namespace"],
            1,
            "unknown namespace 'no.such.namespace'",
        ),
        (["inspect", "{empty}"], 1, "holds no langmem store"),
        (
            ["migrate", "--from", "{db}", "--to", "official+{db}"],
            2,
            "--to must be one of this package's stores",
        ),
        (
            ["migrate", "--from", "official+{empty}", "--to", "{db}"],
            1,
            "no official LangGraph store",
        ),
        (["migrate", "--from", "{db}", "--to", "{db}"], 2, "same store"),
        (
            ["import", "{db}", "--input", "/no/such/file.jsonl"],
            1,
            "cannot read /no/such/file.jsonl",
        ),
        (["export", "{db}", "--embed", "x"], 2, "unrecognized arguments"),
        (["inspect", "{db}", "--embed", "hash:zero"], 2, "--embed hash:DIMS"),
        (["frobnicate"], 2, "invalid choice"),
    ],
)
def test_user_mistakes_are_one_error_line(
    run: Run, mistake_dbs: tuple[str, str], argv: list[str], code: int, message: str
) -> None:
    db, empty = mistake_dbs
    argv = [a.replace("{db}", db).replace("{empty}", empty) for a in argv]
    got, out, err = run("-q", *argv)
    assert got == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err + out


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "langmem_adapters", "inspect", "postgresql://localhost:1/x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert (
        done.stderr.startswith("error: cannot reach PostgreSQL") and "Traceback" not in done.stderr
    )
    help_ = subprocess.run(
        [sys.executable, "-m", "langmem_adapters", "--help"], capture_output=True, text=True
    )
    assert help_.returncode == 0 and "migrate" in help_.stdout


def test_expiry_in_the_past_is_not_exported(run: Run, new_db: NewDB, tmp_path: Path) -> None:
    url = new_db()
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        store.put(("e",), "gone", {"x": 1}, ttl=1)
        store.put(("e",), "kept", {"x": 2})
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE langmem_store SET expires_at = %s WHERE key = 'gone'",
            [datetime.now(timezone.utc) - timedelta(seconds=1)],
        )
    assert [r["key"] for r in _export(run, url, tmp_path / "e.jsonl")] == ["kept"]


# --------------------------------------------------------------------------- Redis


def _redis(modules: bool) -> str:
    """The test Redis with a fresh key prefix for our store."""
    return f"{servers.redis_url(modules)}?prefix=cli{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("modules", [True, False], ids=["query-engine", "plain"])
def test_redis_round_trip_and_migrations_both_ways(
    run: Run, new_db: NewDB, tmp_path: Path, modules: bool
) -> None:
    pg, rd, rd2 = new_db(), _redis(modules), _redis(modules)
    _fill(pg)
    ck = str(tmp_path / "ck.json")
    code, _, err = run(
        "migrate", "--from", pg, "--to", rd, "--embed", "hash:16", "--checkpoint", ck
    )
    assert code == 0, err
    expected = _export(run, pg, tmp_path / "pg.jsonl")
    assert _export(run, rd, tmp_path / "rd.jsonl") == _ms_expiry(
        expected
    )  # Redis keeps expiry in ms
    code, _, err = run("-q", "import", rd2, "--input", str(tmp_path / "rd.jsonl"))
    assert code == 0, err
    assert (tmp_path / "rd.jsonl").read_bytes() == _export_bytes(run, rd2, tmp_path / "rd2.jsonl")
    back = new_db()
    code, _, err = run("migrate", "--from", rd2, "--to", back, "--checkpoint", ck)
    assert code == 0, err
    assert _export(run, back, tmp_path / "back.jsonl") == _ms_expiry(expected)
    code, out, _ = run("inspect", rd, "--json")
    assert json.loads(out)["total"] == 7
    code, out, _ = run("inspect", rd, "--query", "note 3 about tea", "--embed", "hash:16", "--json")
    assert json.loads(out)["items"][0]["score"] is not None
    code, out, _ = run("sweep", rd, "--json")
    assert code == 0 and json.loads(out)["removed"] == 0


def _ms_expiry(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with ``expires_at`` truncated to milliseconds, the resolution of Redis expiry."""
    out = []
    for row in rows:
        if row["expires_at"] is not None:
            when = datetime.fromisoformat(row["expires_at"])
            row = {
                **row,
                "expires_at": when.replace(microsecond=when.microsecond // 1000 * 1000).isoformat(),
            }
        out.append(row)
    return out


def _export_bytes(run: Run, url: str, path: Path) -> bytes:
    _export(run, url, path)
    return path.read_bytes()


def test_demo_on_redis(run: Run) -> None:
    code, out, err = run("demo", "--store", _redis(True))
    assert code == 0, err
    assert "recalled as of" in out and "lived in Paris" in out


def test_migrate_from_the_official_redis_store(run: Run, new_db: NewDB, tmp_path: Path) -> None:
    import redis
    from langgraph.store.redis import RedisStore as OfficialRedisStore

    url = servers.redis_url(True)
    client = redis.Redis.from_url(url)
    for pattern in ("store:*", "store_vectors:*"):
        for key in client.scan_iter(match=pattern):
            client.delete(key)
    with OfficialRedisStore.from_conn_string(url) as official:
        official.setup()
        official.put(("users", "ada"), "tea", {"text": "Ada prefers green tea"})
        official.put(("users", "ada-2"), "city", {"text": "Ada lives in Berlin"})
        official.put(("users", "bob"), "tmp", {"text": "temporary"}, ttl=30)
        stored = {(tuple(i.namespace), i.key): i for i in official.search(("users",), limit=10)}
    target = new_db()
    code, _, err = run(
        "migrate",
        "--from",
        f"official+{url}",
        "--to",
        target,
        "--checkpoint",
        str(tmp_path / "ck.json"),
        "--batch-size",
        "2",
    )
    assert code == 0, err
    rows = _export(run, target, tmp_path / "t.jsonl")
    assert len(rows) == 3
    for row in rows:
        original = stored[(tuple(row["namespace"]), row["key"])]
        assert row["value"] == original.value
        assert datetime.fromisoformat(row["created_at"]) == original.created_at
    tmp = next(r for r in rows if r["key"] == "tmp")
    # The official Redis store keeps no TTL in its documents, only the key's native expiry.
    expires = datetime.fromisoformat(tmp["expires_at"]) - datetime.now(timezone.utc)
    assert timedelta(minutes=29) < expires <= timedelta(minutes=30)
    client.close()
