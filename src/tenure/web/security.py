"""Who may look and who may act.

- Without a token the dashboard answers loopback clients only, and only for a loopback Host
  header: a page on another site cannot reach it through DNS rebinding.
- With a token (`--auth`) every request needs it: `Authorization: Bearer TOKEN` for scripts,
  or the session cookie the sign-in form sets for people.
- Every POST must come from this dashboard: an Origin (or Referer) naming another site is
  refused, forms carry a CSRF token that must match the cookie (double submit), and JSON
  endpoints accept only `application/json`, which a cross-site form cannot send.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

CSRF_COOKIE = "tenure_csrf"
SESSION_COOKIE = "tenure_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
OPEN_PATHS = ("/login", "/static/")


def is_loopback_host(host: str) -> bool:
    """True for an address (or name) that only this machine can reach."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refusal_to_bind(host: str, auth_token: str | None) -> str | None:
    """Why `tenure dashboard` must not start, or None. Retry, forget and cancel are one click
    away on this page: anyone who can reach the port could use them."""
    if auth_token is not None and len(auth_token) < 12:
        return (
            f"--auth: expected a token of at least 12 characters, got {len(auth_token)}; "
            "generate one with: python -c 'import secrets; print(secrets.token_urlsafe())'"
        )
    if auth_token is None and not is_loopback_host(host):
        return (
            f"refusing to listen on {host} without --auth: anyone who can reach this port could "
            "read job arguments and retry, forget or cancel work. Pass --auth TOKEN (or set "
            "$TENURE_DASHBOARD_TOKEN), or bind to 127.0.0.1 and use an SSH tunnel."
        )
    return None


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port: "[::1]:8000" -> "::1"."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def session_value(auth_token: str) -> str:
    """What the sign-in cookie holds: a digest of the token, never the token itself."""
    return hashlib.sha256(b"tenure-dashboard-session:" + auth_token.encode()).hexdigest()


def token_matches(given: str, auth_token: str) -> bool:
    return hmac.compare_digest(given.encode(), auth_token.encode())


def authenticated(request: Request, auth_token: str) -> bool:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and token_matches(header[7:].strip(), auth_token):
        return True
    cookie = request.cookies.get(SESSION_COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie, session_value(auth_token))


def csrf_token(request: Request) -> str:
    """The token forms carry: the cookie's value, or a fresh one the response will set."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing and len(existing) >= 32:
        return existing
    token = getattr(request.state, "new_csrf", None)
    if token is None:
        token = secrets.token_urlsafe(32)
        request.state.new_csrf = token
    return str(token)


def same_origin(request: Request) -> bool:
    """A browser names the page a POST comes from; it must be this dashboard."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        # Browsers always send Origin on a cross-site POST; its absence means a script or an
        # old browser, and the CSRF token or the JSON content type still has to match.
        return source != "null"
    parts = urlsplit(source)
    host = request.headers.get("host", "")
    return parts.netloc.lower() == host.lower()


def csrf_ok(request: Request, submitted: str | None) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not submitted or not cookie:
        return False
    return hmac.compare_digest(submitted.encode(), cookie.encode())


class Guard:
    """ASGI middleware: the access rules above, plus headers that keep the page to itself."""

    def __init__(self, app: ASGIApp, *, auth_token: str | None) -> None:
        self.app = app
        self.auth_token = auth_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self.refuse(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))  # type: ignore[call-overload]
                headers += [
                    (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                    (
                        b"content-security-policy",
                        b"default-src 'self'; img-src 'self' data:; style-src 'self'; "
                        b"script-src 'self'; frame-ancestors 'none'; form-action 'self'",
                    ),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)  # type: ignore[arg-type]

    def refuse(self, request: Request) -> Response | None:
        path = request.url.path
        is_api = path.startswith("/api/")
        if self.auth_token is None:
            client = request.client.host if request.client else ""
            if not is_loopback_host(client):
                return _denied(is_api, 403, "this dashboard answers this machine only (no --auth)")
            host = host_name(request.headers.get("host", ""))
            if not is_loopback_host(host):
                return _denied(is_api, 403, f"unexpected Host header {host!r}")
        elif not path.startswith(OPEN_PATHS) and not authenticated(request, self.auth_token):
            if is_api:
                return _denied(True, 401, "sign in: send Authorization: Bearer TOKEN")
            from starlette.responses import RedirectResponse

            return RedirectResponse(f"/login?next={_safe_next(request)}", status_code=303)
        if request.method not in ("GET", "HEAD", "OPTIONS") and not same_origin(request):
            return _denied(is_api, 403, "cross-site request refused")
        return None


def _safe_next(request: Request) -> str:
    from urllib.parse import quote

    target = request.url.path
    return quote(target if target.startswith("/") and not target.startswith("//") else "/")


def _denied(is_api: bool, status: int, reason: str) -> Response:
    from starlette.responses import JSONResponse, PlainTextResponse

    headers = {"www-authenticate": "Bearer"} if status == 401 else None
    if is_api:
        return JSONResponse({"error": reason}, status_code=status, headers=headers)
    return PlainTextResponse(f"{status}: {reason}\n", status_code=status, headers=headers)
