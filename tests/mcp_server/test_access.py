"""Who may call and which namespace they get: the bind rule, bearer tokens (shared and per user),
the per-user namespace template, and the CLI refusing unsafe or inconsistent options before it
opens a store or binds a port. The HTTP checks run against a server on loopback with
``--require-token`` (the rule that applies off loopback, forced)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from langmem_adapters.addresses import is_loopback
from langmem_adapters.cli import main
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.mcp_server import Namespaces, Tokens, check_bind
from langmem_adapters.mcp_server.toolset import ToolFailure
from tests.mcp_server.helpers import HttpServer, failed, http_session, memories, ok, store_url

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.com"))


def test_a_token_is_required_off_loopback_or_when_forced() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", Tokens("s3cret"))
    with pytest.raises(InvalidArgumentError, match=r"0\.0\.0\.0 is not loopback"):
        check_bind("0.0.0.0", None)
    with pytest.raises(InvalidArgumentError, match="require-token"):
        check_bind("127.0.0.1", None, require_token=True)


def test_tokens_verify_and_name_their_user(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"t-ada": "ada", "t-bob": "bob"}))
    tokens = Tokens.load("shared", str(path))
    assert tokens is not None
    assert tokens.verify("Bearer shared") == (True, None)
    assert tokens.verify("bearer t-bob") == (True, "bob")
    for header in (None, "", "Bearer", "Bearer wrong", "Basic shared", "shared"):
        assert tokens.verify(header) == (False, None)
    assert Tokens.load(None, None) is None
    path.write_text('["t-ada"]')
    with pytest.raises(InvalidArgumentError, match="token -> user"):
        Tokens.load(None, str(path))


def test_namespaces_per_user_or_fixed() -> None:
    per_user = Namespaces.parse(("memories", "{user}"))
    assert per_user.root("ada") == ("memories", "ada")
    with pytest.raises(ToolFailure, match="no user"):
        per_user.root(None)
    with pytest.raises(ToolFailure, match="unusable user"):
        per_user.root("a.b")
    fixed = Namespaces.parse(("team", "notes"))
    assert fixed.root(None) == ("team", "notes")
    with pytest.raises(ToolFailure, match="one namespace for every client"):
        fixed.root("ada")
    with pytest.raises(InvalidArgumentError, match="only have the field"):
        Namespaces.parse(("memories", "{org}", "{user}"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--transport", "http", "--host", "0.0.0.0"], "bearer token is required"),
        (["--transport", "http", "--require-token"], "bearer token is required"),
        (["--transport", "http", "--user", "ada"], "--user is for stdio"),
        ([], "pass --user NAME"),
        (["--user", "a.b"], "unusable user name"),
        (["--namespace", "team/notes", "--user", "ada"], "has no {user} field"),
        (["--user", "ada", "--token", "x"], "apply to --transport http"),
        (["--namespace", "memories//x"], "empty label"),
        (["--transport", "http", "--port", "70000"], "--port must be"),
    ],
)
def test_cli_refuses_before_opening_anything(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # the store URL points at a closed port: refused options never reach it
    code = main(["mcp", "redis://127.0.0.1:1/0", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """An HTTP server on loopback that requires a token: shared ``s3cret``, ``t-ada`` for ada."""
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    path.write_text(json.dumps({"t-ada": "ada"}))
    server = HttpServer(
        store_url("redis-qe"), "--require-token", "--token", "s3cret", "--token-file", str(path)
    )
    yield server
    server.close()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Basic s3cret", "Bearer"])
def test_http_refuses_a_missing_or_wrong_token(
    guarded: HttpServer, authorization: str | None
) -> None:
    headers = dict(ACCEPT)
    if authorization is not None:
        headers["Authorization"] = authorization
    response = httpx.post(f"{guarded.base}/mcp", json=INIT, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


async def test_http_serves_with_the_token_and_binds_user_tokens(guarded: HttpServer) -> None:
    shared = {"Authorization": "Bearer s3cret"}
    async with http_session(f"{guarded.base}/users/bob/mcp", shared) as bob:
        await ok(bob, "save_memory", content="Bob drinks coffee")
    ada = {"Authorization": "Bearer t-ada"}
    async with http_session(f"{guarded.base}/mcp", ada) as session:  # the token names the user
        await ok(session, "save_memory", content="Ada drinks tea")
        assert [h["text"] for h in await memories(session)] == ["Ada drinks tea"]
        assert "no memory" in await failed(session, "forget_memory", id="x")
    # ada's token cannot reach bob's memories by naming him
    response = httpx.post(f"{guarded.base}/users/bob/mcp", json=INIT, headers={**ACCEPT, **ada})
    assert response.status_code == 403
    response = httpx.post(
        f"{guarded.base}/mcp", json=INIT, headers={**ACCEPT, **ada, "X-Memory-User": "bob"}
    )
    assert response.status_code == 403
