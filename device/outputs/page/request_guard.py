"""Who the status server answers, and what every answer says of itself.

In front of every route: a request whose Host header does not name this device
is refused, /healthz included (DNS rebinding; which names do: ``page/host_check.py``).
/healthz says states only (no source, no error text): it is open to monitors.
With a token, every other route needs ``Authorization: Bearer <token>`` or the
cookie that ``/?token=<token>`` sets once (EventSource and <img> cannot send
headers, but they do send same-origin cookies). Without them a browser opening a
page gets a page that says how to give the token, anything else one plain line.
Every answer forbids sniffing, referrers, framing and caching unless its route
says otherwise. One guard for all routes, so that they cannot drift apart.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from device.outputs.page.files import REFUSED_CSP, unauthorized_page
from device.outputs.page.host_check import HostPolicy
from device.outputs.page.http_address import same_site

COOKIE = "lookout_session"
MACHINE_ROUTES = ("/api/", "/events", "/metrics")  # answered to scripts, even in a browser
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RequestGuard:
    """The server's middleware (``check``) and the hook on every response (``headers``)."""

    def __init__(self, hosts: HostPolicy, token: str | None) -> None:
        self.hosts = hosts
        self.token = token or None
        # A cookie derived from the token: it grants the same access, but a leaked
        # cookie (browser profile, proxy log) does not reveal the token itself.
        self._cookie = (
            hmac.new(self.token.encode(), b"lookout status cookie", hashlib.sha256).hexdigest()
            if self.token
            else ""
        )

    @web.middleware
    async def check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.hosts.allows(request.host):
            # DNS rebinding: a page on another site that made its name point here. Also
            # /healthz: what the device is doing is no business of a page from elsewhere.
            return web.Response(
                status=421,
                text="unexpected Host header (add the name with --http-hosts if it is yours)\n",
            )
        if request.path == "/healthz":
            return await handler(request)  # a monitor needs no secret; it gets states only
        if self.token and not self._authorized(request):
            given = request.query.get("token")
            if given is not None and request.method == "GET" and self._token_matches(given):
                # Trade the token in the URL for a cookie, and drop it from the address bar.
                query = {k: v for k, v in request.query.items() if k != "token"}
                target = same_site(request.rel_url.path, query)
                response = web.Response(status=303, headers={"Location": target})
                response.set_cookie(
                    COOKIE, self._cookie, httponly=True, samesite="Strict", path="/"
                )
                return response
            return self._unauthorized(request, wrong_token=given is not None)
        return await handler(request)

    def _unauthorized(self, request: web.Request, *, wrong_token: bool) -> web.Response:
        """401: a browser opening a page gets a page that says how to give the token;
        scripts, the API and the streams get one plain line."""
        challenge = {"WWW-Authenticate": 'Bearer realm="lookout"'}
        if _browser_navigation(request):
            return web.Response(
                status=401,
                text=unauthorized_page(wrong_token=wrong_token),
                content_type="text/html",
                headers=challenge | {"Content-Security-Policy": REFUSED_CSP},
            )
        return web.Response(
            status=401,
            text="unauthorized: send Authorization: Bearer <token>, "
            "or open /?token=<token> once in a browser\n",
            headers=challenge,
        )

    def _token_matches(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and self._token_matches(value.strip()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self._cookie.encode())

    async def headers(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Cache-Control", "no-store")


def _browser_navigation(request: web.Request) -> bool:
    """A browser opening a page (it asks for HTML), not a script, a stream or the API."""
    return (
        request.method in ("GET", "HEAD")
        and "text/html" in request.headers.get("Accept", "")
        and not request.path.startswith(MACHINE_ROUTES)
    )


__all__ = ["COOKIE", "RequestGuard"]
