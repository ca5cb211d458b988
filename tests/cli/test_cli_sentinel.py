"""The command line on a ``redis+sentinel://`` URL (the Sentinel setup of tests/servers.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from langmem_adapters.redis import RedisStore
from tests import servers
from tests.cli.conftest import Run


def test_inspect_export_import_on_a_sentinel_url(run: Run, tmp_path: Path) -> None:
    prefix = f"cli{uuid.uuid4().hex[:8]}"
    url = servers.redis_sentinel_url()
    with RedisStore.from_conn_string(url, prefix=prefix) as store:
        for i in range(3):
            store.put(("users", "ada"), f"k{i}", {"n": i})
    code, out, err = run("inspect", f"{url}?prefix={prefix}", "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == 3
    exported = tmp_path / "out.jsonl"
    code, _, err = run("-q", "export", f"{url}?prefix={prefix}", "--output", str(exported))
    assert code == 0, err
    copy = f"{url}?prefix={prefix}b"
    code, _, err = run("-q", "import", copy, "--input", str(exported))
    assert code == 0, err
    with RedisStore.from_conn_string(url, prefix=f"{prefix}b") as store:
        found = store.search(("users",), limit=10)
        assert sorted(item.value["n"] for item in found) == [0, 1, 2]


def test_a_bad_sentinel_url_is_one_error_line_without_the_password(run: Run) -> None:
    code, _, err = run("inspect", "redis+sentinel://u:hunter2@127.0.0.1:1/svc?bogus=1")
    assert code == 2
    assert "unknown option 'bogus'" in err and "hunter2" not in err
    assert len(err.strip().splitlines()) == 1
