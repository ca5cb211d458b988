"""Who is calling and which namespace they get: the namespace template filled per user
(:class:`Namespaces`), the bearer tokens (:class:`Tokens`), the bind rule (:func:`check_bind`) and the
HTTP gate that checks the token and finds the user of each request (:class:`Gate`).

Over HTTP the user comes from the token (a token file binds each token to one user), else from the
path ``/users/NAME/mcp``, else from the ``X-Memory-User`` header; over stdio from ``--user``.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from langmem_adapters.addresses import is_loopback
from langmem_adapters.errors import InvalidArgumentError, NamespaceTemplateError
from langmem_adapters.mcp_server.toolset import ToolFailure
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = [
    "MCP_PATH",
    "USER_HEADER",
    "Gate",
    "Namespaces",
    "Tokens",
    "check_bind",
    "request_user",
]

#: The endpoint of the streamable HTTP transport; ``/users/NAME/mcp`` is the same for user NAME.
MCP_PATH = "/mcp"
USER_HEADER = "x-memory-user"
_USER_PATH = re.compile(r"^/users/([^/]+)/mcp/?$")
_STATE = "langmem_user"


@dataclass(frozen=True)
class Namespaces:
    """The namespace of each user: a template whose only field is ``{user}`` (one namespace per
    user), or a namespace without fields (one namespace for every client)."""

    template: NamespaceTemplate

    @classmethod
    def parse(cls, labels: tuple[str, ...]) -> Namespaces:
        """Check the template: ``{user}`` is the only field it may have."""
        template = NamespaceTemplate(labels)
        other = [name for name in template.names if name != "user"]
        if other:
            raise InvalidArgumentError(
                f"the namespace may only have the field {{user}}, not {', '.join(other)}"
            )
        return cls(template)

    @property
    def per_user(self) -> bool:
        """Whether each user gets their own namespace."""
        return bool(self.template.names)

    def root(self, user: str | None) -> tuple[str, ...]:
        """The namespace of ``user``; :class:`ToolFailure` when the user is missing or unusable."""
        if not self.per_user:
            if user is not None:
                raise ToolFailure(
                    f"this server keeps one namespace for every client, not one per user "
                    f"(got user {user!r}): connect to {MCP_PATH} without a user"
                )
            return self.template.labels
        if user is None:
            raise ToolFailure(
                "no user: connect to /users/NAME/mcp or send the X-Memory-User header "
                "(over stdio: start the server with --user NAME)"
            )
        try:
            return self.template.fill({"user": user}, {})
        except NamespaceTemplateError as exc:
            raise ToolFailure(f"unusable user name {user!r}: {exc}") from None


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens: one ``shared`` token (the user is named by the path or header) and tokens
    each bound to one user (``per_user``: token -> user), who then cannot name another user."""

    shared: str | None = None
    per_user: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, shared: str | None, path: str | None) -> Tokens | None:
        """From ``--token`` and ``--token-file`` (a JSON object token -> user); ``None`` for none."""
        per_user: dict[str, str] = {}
        if path is not None:
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InvalidArgumentError(f"cannot read the token file {path}: {exc}") from None
            if not isinstance(data, dict) or not all(
                isinstance(k, str) and k and isinstance(v, str) and v for k, v in data.items()
            ):
                raise InvalidArgumentError(
                    f"the token file {path} must be a JSON object of token -> user name strings"
                )
            per_user = data
        if shared is not None and not shared:
            raise InvalidArgumentError("the bearer token cannot be empty")
        if shared is None and not per_user:
            return None
        return cls(shared, per_user)

    def verify(self, authorization: str | None) -> tuple[bool, str | None]:
        """Whether the ``Authorization`` header holds a known token, and that token's user."""
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            return False, None
        given = given.strip()
        found: tuple[bool, str | None] = (False, None)
        if self.shared is not None and hmac.compare_digest(given, self.shared):
            found = (True, None)
        for token, user in self.per_user.items():  # every token compared: no early exit
            if hmac.compare_digest(given, token):
                found = (True, user)
        return found


def check_bind(host: str, tokens: Tokens | None, *, require_token: bool = False) -> None:
    """Refuse to serve HTTP beyond loopback (or with ``require_token``) without a bearer token."""
    if tokens is None and (require_token or not is_loopback(host)):
        why = "--require-token is set" if is_loopback(host) else f"{host} is not loopback"
        raise InvalidArgumentError(
            f"a bearer token is required ({why}): pass --token (or LANGMEM_MCP_TOKEN) or "
            "--token-file"
        )


def request_user(request: Any) -> str | None:
    """The user the gate found for an HTTP request (``None``: no request, or none named)."""
    state = getattr(request, "scope", {}).get("state") or {}
    user = state.get(_STATE)
    return user if isinstance(user, str) else None


class Gate:
    """ASGI middleware in front of the MCP app: checks the bearer token (when tokens are set),
    maps ``/users/NAME/mcp`` to the endpoint and records the request's user for the tools."""

    def __init__(self, app: ASGIApp, tokens: Tokens | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        token_user: str | None = None
        if self.tokens is not None:
            ok, token_user = self.tokens.verify(headers.get("authorization"))
            if not ok:
                await _deny(scope, receive, send, 401, "missing or wrong bearer token")
                return
        scope = dict(scope)
        path_user: str | None = None
        if match := _USER_PATH.match(scope["path"]):
            path_user = unquote(match[1])
            scope["path"], scope["raw_path"] = MCP_PATH, MCP_PATH.encode()
        header_user = headers.get(USER_HEADER)
        if path_user is not None and header_user is not None and header_user != path_user:
            await _deny(scope, receive, send, 400, "the path and X-Memory-User name other users")
            return
        claimed = path_user if path_user is not None else header_user
        if token_user is not None and claimed is not None and claimed != token_user:
            await _deny(scope, receive, send, 403, "this token belongs to another user")
            return
        scope["state"] = {**(scope.get("state") or {}), _STATE: token_user or claimed}
        await self.app(scope, receive, send)


async def _deny(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    await JSONResponse({"error": message}, status_code=status, headers=headers)(
        scope, receive, send
    )
