"""``langmem-adapters ui``: the real command serves the printed URL; bad options are one error line."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("starlette")

from langmem_adapters.cli import main
from tests import servers
from tests.ui.conftest import SeededStore


@pytest.mark.parametrize("backend", ["postgres"])
def test_ui_command_prints_a_loopback_url_and_serves_it(seeded: SeededStore) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "-m",
        "langmem_adapters",
        "ui",
        servers.postgres_dsn(),
        "--read-only",
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200
        assert "read-only" in page.text and "acme" in page.text
        assert "delete" not in page.text.lower()
        assert httpx.post(url + "delete", data={"ns": "acme"}, timeout=30).status_code in (404, 405)
        refused = httpx.get(url, headers={"host": "attacker.example"}, timeout=30)
        assert refused.status_code == 400  # DNS rebinding: only loopback names are served
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert seeded.store.count(("acme",)) == 15  # type: ignore[attr-defined]


def test_ui_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "embedded:/nonexistent-never", "--hybrid"]) == 2
    assert "--hybrid needs --embed" in capsys.readouterr().err
    assert main(["ui", "ftp://x", "--port", "1"]) == 2
    assert main(["ui", "embedded", "--port", "70000"]) == 2
    assert "--port must be" in capsys.readouterr().err
