"""Who the live ``bench view`` answers: its own pages in the browser that opened the URL it printed,
nobody else. The documents hold every prompt the SDKs sent, and any web page the user visits can
make the browser send requests to loopback, so every request must pass three checks:

1. ``Host`` names 127.0.0.1, localhost or [::1] with the port the request came in on (else 421): a
   DNS-rebinding page (``evil.example`` resolving to 127.0.0.1) names its own host.
2. The browser's fetch metadata does not say another site sent it (``Sec-Fetch-Site: same-site``
   or ``cross-site``, else 403), unless it is the user opening a page: a page on another port of
   127.0.0.1 is the same *site* and gets the cookie, but never its own request through.
3. The token of this start, minted by the command and printed in its URL (``?token=...``), comes
   in the query or in the cookie the first page answer sets (``HttpOnly``, ``SameSite=Strict``,
   named by the port so two views do not clobber each other), else 403.

No answer grants CORS, every answer says ``nosniff`` (a JSON document is never run as a script),
``Cross-Origin-Resource-Policy: same-origin`` and no framing, no caching and no referrer.
"""

from __future__ import annotations

import secrets
from typing import Any

HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
FOREIGN = frozenset({"same-site", "cross-site"})
HEADERS = {
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
    "x-frame-options": "DENY",
    "content-security-policy": "frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def new_token() -> str:
    """A fresh token for one start of ``bench view`` (never stored: a restart mints another)."""
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    return f"bench-view-{port}"


def refusal(scope: dict[str, Any], token: str) -> tuple[int, str] | None:
    """Why this request is refused, as (status, one line), or None to answer it."""
    from starlette.requests import HTTPConnection

    request = HTTPConnection(scope)
    port = scope["server"][1] if scope.get("server") else None
    host = request.headers.get("host", "")
    if not _own_host(host, port):
        return 421, f"bench view answers only http://127.0.0.1:{port}/ (or localhost, [::1]), not Host {host!r}"
    site = request.headers.get("sec-fetch-site", "")
    mode, dest = request.headers.get("sec-fetch-mode"), request.headers.get("sec-fetch-dest")
    navigation = mode == "navigate" and dest == "document"
    if site in FOREIGN and not navigation:
        return 403, "bench view answers only its own pages, not a request another site's page sent"
    given = (request.query_params.get("token", ""), request.cookies.get(cookie_name(port or 0), ""))
    if not any(secrets.compare_digest(one.encode(), token.encode()) for one in given):
        return 403, f"bench view wants the token of the URL it printed at start (http://127.0.0.1:{port}/?token=...)"
    return None


def _own_host(host: str, port: int | None) -> bool:
    """``Host`` is a loopback name with this server's port (no port in it means 80)."""
    name, given = _split_host(host.lower())
    return name in HOSTS and (port is None or (given or "80") == str(port))


def _split_host(host: str) -> tuple[str, str]:
    """``name:port`` or ``[v6]:port`` as (name, port text); ("", "") when it is neither."""
    if not host.startswith("["):
        name, _, given = host.partition(":")
        return name, given
    close = host.find("]")
    rest = host[close + 1 :]
    if close < 0 or (rest and not rest.startswith(":")):
        return "", ""
    return host[: close + 1], rest[1:]


def guard(inner: Any, token: str) -> Any:
    """The ASGI app ``inner`` behind the checks: refused requests get one line of text; answers
    get the headers above, and a request that brought the token in its query the cookie too."""
    from starlette.requests import HTTPConnection
    from starlette.responses import PlainTextResponse

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        refused = refusal(scope, token)
        if refused is not None:
            status, line = refused
            await PlainTextResponse(line + "\n", status_code=status, headers=HEADERS)(scope, receive, send)
            return
        port = scope["server"][1] if scope.get("server") else 0
        cookie = HTTPConnection(scope).query_params.get("token") == token

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in present]
                if cookie:
                    value = f"{cookie_name(port)}={token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await inner(scope, receive, sending)

    return app
