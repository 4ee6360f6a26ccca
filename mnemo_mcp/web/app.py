"""The dashboard's Starlette app: routes, and the guard every request passes first.

The guard is the security boundary. The server listens on loopback only, but any web page the
user opens can still make their browser send requests to 127.0.0.1, and a DNS-rebinding page
can even read the answers; so every request must carry the per-run token (from the URL that
`mnemo-mcp dashboard` printed, then an HttpOnly SameSite=Strict cookie), name this server in
its Host header, and come from this origin when it says where it comes from. Changes are POST
only, with a per-run CSRF token in the form."""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, Headers, QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AmbiguousId, InvalidInput, MnemoError, NotFound
from . import pages, parts
from .html import local_path, url

log = logging.getLogger("mnemo_mcp.web")

SECURITY_HEADERS = {
    # No inline script or style anywhere in the pages, so a stored <script> that somehow got
    # past escaping still would not run.
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not no-referrer: with it Chromium sends `Origin: null` on form posts, which the guard
    # must refuse. same-origin keeps the Referer to this server (its URLs hold no token).
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
STATIC = {"style.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
FLASH_KEYS = ("flash", "fid")


class Guard:
    """ASGI middleware: Host, Origin and token checks before anything else runs."""

    def __init__(self, app: ASGIApp, *, port: int, token: str):
        self.app = app
        self.token = token
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{h}" for h in self.hosts}
        # Cookies are not separated by port: a name per port keeps two dashboards apart.
        self.cookie = f"mnemo_dashboard_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present]
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            return await self._refuse(
                scope, receive, send_secured, "this dashboard answers only to 127.0.0.1 and localhost on its own port"
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return await self._refuse(scope, receive, send_secured, "request from another origin refused")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        offered = query.get("token")
        if offered is not None and secrets.compare_digest(offered.encode(), self.token.encode()):
            if scope["method"] == "GET":
                # Trade the token in the URL for a cookie and drop it from the address bar (and
                # from history), so it does not sit in the page for anyone looking over a shoulder.
                rest = urlencode(
                    [
                        (k, v)
                        for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
                        if k != "token"
                    ]
                )
                target = local_path(scope["path"] + ("?" + rest if rest else ""))
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
                return await response(scope, receive, send_secured)
        else:
            cookie = Request(scope).cookies.get(self.cookie, "")
            if not secrets.compare_digest(cookie.encode(), self.token.encode()):
                return await self._refuse(
                    scope,
                    receive,
                    send_secured,
                    "no valid dashboard token: open the URL that `mnemo-mcp dashboard` printed",
                )
        await self.app(scope, receive, send_secured)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, why: str) -> None:
        await PlainTextResponse(f"403 Forbidden: {why}\n", status_code=403)(scope, receive, send)


def _static(name: str) -> bytes:
    return resources.files("mnemo_mcp.web").joinpath("static", name).read_bytes()


Call = Callable[..., Awaitable[Any]]
CtxOf = Callable[[Request], parts.Ctx]
Handler = Callable[[Request], Awaitable[Response]]
ACTIONS = ("rate", "archive", "restore", "release", "delete")


def create_app(service: Any, *, port: int, token: str, csrf: str | None = None) -> Starlette:
    """The dashboard for one MemoryService. `port` is the one the server listens on: the Host
    and Origin checks compare against it."""
    csrf_token = csrf or secrets.token_urlsafe(32)
    call = _one_at_a_time()
    ctx = _context(service, csrf_token)
    routes = [
        Route("/", _list_view(service, call, ctx), methods=["GET"]),
        Route("/analytics", _analytics_view(service, call, ctx), methods=["GET"]),
        Route("/memory/{mid}", _detail_view(service, call, ctx), methods=["GET"]),
        Route("/memory/{mid}/confirm-delete", _confirm_delete_view(service, call, ctx), methods=["GET"]),
        Route("/static/{name}", _static_view, methods=["GET"]),
    ]
    # Every path that changes something answers POST only (GET gets 405).
    routes += [
        Route(f"/memory/{{mid}}/{kind}", _action(kind, service, call, ctx, csrf_token), methods=["POST"])
        for kind in ACTIONS
    ]
    app = Starlette(routes=routes, exception_handlers={Exception: _on_error})
    app.add_middleware(Guard, port=port, token=token)
    app.state.csrf = csrf_token
    return app


def _one_at_a_time() -> Call:
    """Runs service calls in the thread pool, one at a time: they share the service's connection."""
    lock = threading.Lock()

    async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def locked() -> Any:
            with lock:
                return fn(*args, **kwargs)

        return await run_in_threadpool(locked)

    return call


def _context(service: Any, csrf_token: str) -> CtxOf:
    def ctx(request: Request, flash: tuple[str, str] | None = None) -> parts.Ctx:
        kept = [(k, v) for k, v in request.query_params.multi_items() if k not in FLASH_KEYS]
        here = request.url.path + ("?" + urlencode(kept) if kept else "")
        if flash is None and request.query_params.get("flash"):
            flash = (request.query_params["flash"], request.query_params.get("fid", "")[:64])
        return parts.Ctx(
            csrf=csrf_token, here=here, db_path=service.settings.db_label, scope=service.default_scope(), flash=flash
        )

    return ctx


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _fail(ctx: parts.Ctx, err: Exception) -> HTMLResponse:
    status = 404 if isinstance(err, NotFound) else 400
    return _html(pages.error_page(ctx, status, str(err)), status)


async def _on_error(request: Request, exc: Exception) -> Response:
    # Starlette sends this answer from its outermost middleware, outside the guard that adds
    # the security headers to every other response: they go on here.
    if isinstance(exc, MnemoError):
        message = str(exc)
    else:
        log.exception("dashboard error")
        message = "internal error; see the terminal running the dashboard"
    return HTMLResponse(pages.error_page(None, 500, message), status_code=500, headers=SECURITY_HEADERS)


# --- pages ---------------------------------------------------------------------------------------


def _list_params(p: QueryParams) -> tuple[dict[str, Any], int]:
    """The list's filters from the query string, and how many memories a page shows."""
    tags = [t.strip() for raw in p.getlist("tags") for t in raw.split(",") if t.strip()]
    try:
        number = max(1, int(p.get("page") or 1))
    except ValueError:
        number = 1
    params: dict[str, Any] = {
        "q": p.get("q", "").strip(),
        "tags": tags,
        "type": p.get("type", ""),
        "tier": p.get("tier", ""),
        "source": p.get("source", ""),
        "quarantined": p.get("quarantined", ""),
        "archived": p.get("archived", "live"),
        "domain": p.get("domain", ""),
        "sort": p.get("sort", "newest"),
        "page": number,
    }
    limit = 50
    if params["q"]:
        # A search shows the read's top k (memory_read's default is 5): more would rank
        # below-threshold noise the model never sees.
        k = p.get("k", "10")
        limit = int(k) if k.isdigit() and int(k) in parts.SEARCH_SIZES else 10
        params["k"] = limit
    return params, limit


def _list_view(service: Any, call: Call, ctx: CtxOf) -> Handler:
    async def list_view(request: Request) -> Response:
        params, limit = _list_params(request.query_params)
        try:
            page = await call(
                service.browse_list,
                params["q"] or None,
                tags=params["tags"] or None,
                memory_type=params["type"] or None,
                tier=params["tier"] or None,
                source=params["source"] or None,
                quarantined=bool(params["quarantined"]),
                archived=params["archived"],
                domain=params["domain"] or None,
                sort=params["sort"],
                limit=limit,
                offset=(params["page"] - 1) * limit,
            )
            facets = await call(service.browse_facets)
        except (InvalidInput, NotFound) as err:
            return _fail(ctx(request), err)
        return _html(pages.list_page(ctx(request), page, facets, params))

    return list_view


def _detail_view(service: Any, call: Call, ctx: CtxOf) -> Handler:
    async def detail_view(request: Request) -> Response:
        try:
            detail = await call(service.browse_memory, request.path_params["mid"])
        except (InvalidInput, NotFound, AmbiguousId) as err:
            return _fail(ctx(request), err)
        return _html(pages.detail_page(ctx(request), detail))

    return detail_view


def _confirm_delete_view(service: Any, call: Call, ctx: CtxOf) -> Handler:
    async def confirm_delete_view(request: Request) -> Response:
        try:
            detail = await call(service.browse_memory, request.path_params["mid"], feedback_limit=1)
        except (InvalidInput, NotFound, AmbiguousId) as err:
            return _fail(ctx(request), err)
        back = local_path(request.query_params.get("next"), f"/memory/{detail.memory.id}")
        return _html(pages.confirm_delete_page(ctx(request), detail.memory, back))

    return confirm_delete_view


def _analytics_view(service: Any, call: Call, ctx: CtxOf) -> Handler:
    async def analytics_view(request: Request) -> Response:
        return _html(pages.analytics_page(ctx(request), await call(service.browse_analytics)))

    return analytics_view


async def _static_view(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return PlainTextResponse("not found", status_code=404)
    return Response(_static(name), media_type=STATIC[name])


# --- actions -------------------------------------------------------------------------------------


def _action(kind: str, service: Any, call: Call, ctx: CtxOf, csrf_token: str) -> Handler:
    async def handle(request: Request) -> Response:
        form = await request.form()
        if not secrets.compare_digest(str(form.get("csrf", "")).encode(), csrf_token.encode()):
            return PlainTextResponse("403 Forbidden: missing or wrong CSRF token; reload the page\n", status_code=403)
        try:
            result, flash = await _perform(kind, service, call, request.path_params["mid"], form)
        except (InvalidInput, NotFound, AmbiguousId) as err:
            return _fail(ctx(request), err)
        return _redirect_back(kind, str(form.get("next") or ""), result.id, flash)

    return handle


async def _perform(kind: str, service: Any, call: Call, mid: str, form: FormData) -> tuple[Any, str]:
    """Does `kind` to the memory; its result and the flash message the page after shows."""
    if kind == "rate":
        try:
            rating = int(str(form.get("rating", "")))
        except ValueError:
            raise InvalidInput("rating must be 1, 0 or -1") from None
        result = await call(service.rate, mid, rating=rating, reason=str(form.get("reason") or "") or None)
        return result, {1: "rated-up", -1: "rated-down"}.get(rating, "rated-neutral")
    if kind == "archive":
        return await call(service.archive, mid, reason="archived from the dashboard"), "archived"
    if kind == "restore":
        return await call(service.restore, mid), "restored"
    if kind == "release":  # a person, in the dashboard: the only place besides the CLI
        return await call(
            service.release, mid, by="dashboard", how="released in the dashboard (token and form checked)"
        ), "released"
    return await call(service.delete, mid), "deleted"


def _redirect_back(kind: str, next_url: str, mid: str, flash: str) -> RedirectResponse:
    """Back to the page the action came from, with the flash and scrolled to the memory's card."""
    back = local_path(next_url, "/")
    if kind == "delete" and back.startswith(f"/memory/{mid}"):
        back = "/"  # its own page is gone
    path, _, query = back.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in FLASH_KEYS]
    anchor = "" if kind == "delete" else f"#m-{mid}"
    return RedirectResponse(
        url(path, {}) + "?" + urlencode(kept + [("flash", flash), ("fid", mid)]) + anchor, status_code=303
    )
