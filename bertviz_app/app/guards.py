"""ASGI middleware in front of gradio's routes: what a request may make the server read, store or reveal before gradio
looks at it. Each guard is a small class that FastAPI builds as `Middleware(Guard, **options)`; server.py passes them
to `launch(app_kwargs={"middleware": [...]})`, the public way to put middleware inside a gradio app. Nothing here
imports gradio: the guards speak HTTP (paths, headers, status codes), and the one gradio detail they need (where the
page embeds the API description) comes in as a function from gradio_internals.

- BodyLimit: no request body larger than `max_bytes`, on every route, refused before anything reads it.
- NoUploads: this app has no file input; gradio's upload routes would store any file, so they answer 403.
- LoginRequired (with --auth): every route but those that draw the login page needs a login; the login page itself
  no longer embeds the API description (endpoint names, model names, examples).
- LoginThrottle (with --auth): failed logins are limited per client address.
- CallErrors: the curl-style `/gradio_api/call/v2/...` route answers a missing or unknown argument in words (422)
  instead of a 500 and a traceback in the log.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

API = "/gradio_api"


def route_path(scope: Scope) -> str:
    """The path as the app's routes see it (without a root_path a proxy put in front)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return (path[len(root):] or "/") if root and path.startswith(root) else path


async def answer(send: Send, status: int, content: Any, headers: list[tuple[bytes, bytes]] = ()) -> None:
    """A complete JSON response."""
    body = json.dumps(content).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413, on every route: a declared Content-Length at once, before a
    byte of the body is read; a chunked body as soon as the bytes read pass the limit. The connection stays open:
    uvicorn reads whatever the client still sends and drops it (nothing is kept), and the client reads the 413.
    (Closing it instead would make the kernel reset the connection over the unread bytes, and the client could lose
    the answer.)"""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def message(self) -> dict:
        return {"error": f"The request is larger than the {self.max_bytes / 2**20:g} MB this server accepts."}

    async def refuse(self, send: Send) -> None:
        await answer(send, 413, self.message())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await answer(send, 400, {"error": "Content-Length is not a number."})
                return
            if length > self.max_bytes:
                await self.refuse(send)
                return
        received, refused, started = 0, False, False

        async def counted_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if not started:
                        await self.refuse(send)
                    return {"type": "http.disconnect"}  # the route stops reading; what it answers is dropped
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not refused:
                raise


class NoUploads:
    """The app has no file input, so nothing needs gradio's upload routes; they would otherwise store files of any
    size in gradio's cache (for as long as the cache lives)."""

    PATHS = {f"{API}/upload", f"{API}/upload/", f"{API}/process_recording", f"{API}/process_recording/"}

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and route_path(scope) in self.PATHS:
            await answer(send, 403, {"error": "This app takes no file uploads."})
            return
        await self.app(scope, receive, send)


class LoginRequired:
    """With --auth: only what draws the login page and logs in is open; every other route, gradio's own included
    (some, such as /gradio_api/cancel, /reset and /heartbeat, check no login themselves), answers 401 without one.
    The page at / is served to everyone (it is the login form), but without a login `strip_api_info` takes the API
    description out of it.

    Whether a request carries a login is asked of gradio over its own HTTP route, /gradio_api/login_check, with the
    request's cookies: no reach into gradio's token store."""

    # The login page's own requests; and /gradio_api/startup-events, which launch() itself calls without a login
    # (after the first call it does nothing).
    PUBLIC = {"/", "/login", "/login/", "/logout", "/favicon.ico", "/theme.css", f"{API}/theme.css", "/manifest.json",
              "/robots.txt", "/pwa_icon", f"{API}/login_check", f"{API}/login_check/", f"{API}/startup-events"}
    PUBLIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon/")
    UNAUTHENTICATED = {"detail": {"error": "Not authenticated", "auth_message": None}}  # gradio's own 401 body

    def __init__(self, app: ASGIApp, strip_api_info: Callable[[bytes], bytes]):
        self.app = app
        self.strip_api_info = strip_api_info

    async def logged_in(self, scope: Scope) -> bool:
        status = 0
        check = {**scope, "method": "GET", "path": scope.get("root_path", "") + f"{API}/login_check",
                 "raw_path": f"{API}/login_check".encode(), "query_string": b"",
                 "headers": [(k, v) for k, v in scope.get("headers", ()) if k.lower() in (b"cookie", b"host")]}

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await self.app(check, receive, send)
        return status == 200

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        if path == "/" and scope["method"] in ("GET", "HEAD"):
            if await self.logged_in(scope):
                await self.app(scope, receive, send)
            else:
                await self.login_page(scope, receive, send)
        elif path in self.PUBLIC or path.startswith(self.PUBLIC_PREFIXES) or await self.logged_in(scope):
            await self.app(scope, receive, send)
        else:
            await answer(send, 401, self.UNAUTHENTICATED)

    async def login_page(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffered_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            if start["status"] == 200:
                body = self.strip_api_info(body)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

        await self.app(scope, receive, buffered_send)


class LoginThrottle:
    """With --auth: at most `max_failures` failed logins per client address in any `window_s` seconds; past that,
    POST /login answers 429 (with Retry-After) without trying the password, the right one included, until the oldest
    failure is `window_s` old. A class behind one school address shares the budget, hence a generous default.

    Every attempt counts from the moment it arrives and is taken back when the password was right: guesses sent all
    at once cannot slip past the limit while the first ones are being checked.

    The address is the client's as uvicorn reports it: behind a proxy on this machine (trusted by uvicorn's default
    FORWARDED_ALLOW_IPS, 127.0.0.1), the one that proxy names in X-Forwarded-For."""

    PATHS = {"/login", "/login/"}

    def __init__(self, app: ASGIApp, max_failures: int = 20, window_s: float = 300, max_clients: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        self.app = app
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_clients = max_clients
        self.clock = clock
        self.failures: dict[str, deque[float]] = {}

    def client(self, scope: Scope) -> str:
        return (scope.get("client") or ("?", 0))[0]

    def recent(self, key: str, now: float) -> deque[float]:
        times = self.failures.get(key, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        return times

    def record_failure(self, key: str, now: float) -> None:
        if key not in self.failures and len(self.failures) >= self.max_clients:
            for other in list(self.failures):  # forget addresses whose failures are all old, else the oldest entry
                if not self.recent(other, now):
                    del self.failures[other]
            if len(self.failures) >= self.max_clients:
                del self.failures[next(iter(self.failures))]
        times = self.recent(key, now)
        times.append(now)
        self.failures[key] = times

    def take_back(self, key: str, when: float) -> None:
        times = self.failures.get(key)
        if times and when in times:
            times.remove(when)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) not in self.PATHS:
            await self.app(scope, receive, send)
            return
        key, now = self.client(scope), self.clock()
        times = self.recent(key, now)
        if len(times) >= self.max_failures:
            wait = max(1, math.ceil(times[0] + self.window_s - now))
            await answer(send, 429, {"detail": f"Too many failed logins from your address; try again in {wait} s."},
                         [(b"retry-after", str(wait).encode())])
            return
        self.record_failure(key, now)
        status = 0

        async def watched_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            if status not in (400, 401, 403):  # not a wrong password (gradio answers one with 400): not a failure
                self.take_back(key, now)


class CallErrors:
    """gradio's POST /gradio_api/call/v2/<endpoint> turns the JSON object of named arguments into the endpoint's
    positional ones before the queue, and a missing, unexpected or wrongly named argument raises TypeError (an
    unknown endpoint KeyError) inside the route: a 500 with no words and a traceback in the log. Answer those with
    422 and gradio's own sentence, which names the argument."""

    PREFIX = f"{API}/call/v2/"

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not route_path(scope).startswith(self.PREFIX):
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except (TypeError, KeyError) as err:
            if started:
                raise
            name = route_path(scope)[len(self.PREFIX):].strip("/")
            message = (f"No API endpoint named /{name}." if isinstance(err, KeyError)
                       else f"{str(err).split('. Please')[0].rstrip('.')}.")
            await answer(send, 422, {"error": message})
