"""What keeps the browser safe to run: an access token when bound beyond loopback, a Host check
against DNS rebinding, a CSRF token and Origin check on every write (writes are POST only), and
response headers that forbid inline scripts, framing and content sniffing."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

__all__ = ["Guard", "new_token"]

TOKEN_COOKIE = "langmem_ui_token"
TOKEN_PARAM = "token"

#: Stored text is untrusted: no inline script or style can run, whatever a page contains.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a form's Origin "null"
    "Cache-Control": "no-store",
}


def new_token() -> str:
    """A random token (access or CSRF)."""
    return secrets.token_urlsafe(24)


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass
class Guard:
    """The checks every request passes: ``token`` (``None``: none required), the Host names
    accepted (``None``: any) and the CSRF token forms carry."""

    token: str | None = None
    allowed_hosts: frozenset[str] | None = None
    csrf: str = field(default_factory=new_token)

    def refusal(self, request: Request) -> Response | None:
        """Why ``request`` is refused (a response), or ``None`` to let it through."""
        if self.allowed_hosts is not None and request.headers.get("host") not in self.allowed_hosts:
            return PlainTextResponse("unknown Host header", status_code=400)
        if self.token is None:
            return None
        if _same(request.cookies.get(TOKEN_COOKIE), self.token):
            return None
        if _same(request.query_params.get(TOKEN_PARAM), self.token) and request.method == "GET":
            # The printed URL carries the token once; a cookie keeps it out of later URLs.
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
            query = urlencode(rest)
            response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), 303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            return response
        return PlainTextResponse(
            "a token is required: open the URL the ui command printed", status_code=401
        )

    def write_refusal(self, request: Request, form_csrf: object) -> Response | None:
        """Why a write (a POST with its form's CSRF field) is refused, or ``None``: the form must
        carry this server's CSRF token and a cross-site Origin is refused outright."""
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return PlainTextResponse("cross-site request refused", status_code=403)
        if not isinstance(form_csrf, str) or not _same(form_csrf, self.csrf):
            return PlainTextResponse("missing or wrong CSRF token", status_code=403)
        return None

    async def __call__(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        """Middleware: refuse what :meth:`refusal` refuses; add the safety headers to the rest."""
        response = self.refusal(request) or await call_next(request)
        response.headers.update(HEADERS)
        return response
