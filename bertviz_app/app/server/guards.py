"""ASGI middleware in front of gradio's routes: what a request may make the server read, store or reveal before gradio
looks at it. Each guard is a small class that FastAPI builds as `Middleware(Guard, **options)`; server.py passes them
to `launch(app_kwargs={"middleware": [...]})`, the public way to put middleware inside a gradio app. Nothing here
imports gradio: the guards speak HTTP (paths, headers, status codes), and the one gradio detail they need (where the
page embeds the API description) comes in as a function from gradio_internals.

- BodyLimit: no request body larger than `max_bytes`, on every route, refused before anything reads it.
- NoUploads: this app has no file input; gradio's upload routes would store any file, so they answer 403.
- PageCache (without --auth): the page, its configuration and the API description, built once per address.
- LoginRequired (with --auth): every route but those that draw the login page needs a login; the login page itself
  no longer embeds the API description (endpoint names, model names, examples).
- LoginThrottle (with --auth): failed logins are limited per client address, per user name and for the server.
- ClientSessions, SessionBudget: new sessions are bounded per client address (gradio_internals.bound_new_sessions
  asks the budget whenever gradio is about to create one).
- ServerFunctions: the views' server-function route answers only existing sessions, in words.
- CallErrors: the curl-style `/gradio_api/call/v2/...` route answers a missing or unknown argument in words (422)
  instead of a 500 and a traceback in the log.
"""

from __future__ import annotations

import contextvars
import dataclasses
import ipaddress
import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request

from ... import i18n, limits

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


class PageCache:
    """Without --auth: the page, its configuration and the API description are the same bytes for every visitor
    who asks by the same address, for as long as the server runs; gradio rebuilds each from a deep copy of the
    page's configuration, at a cost of CPU per visitor (docs/ARCHITECTURE.md, "Measured"). The first answer
    per address is kept and given again. Only GET requests (the page and its configuration without a query string:
    a permalink's page is built as before) and complete answers (200, no cookie set) are kept, for the `entries`
    addresses asked last."""

    PATHS = {"/", "/config"}
    QUERIED = {f"{API}/info"}  # ?serialize=False, ?all_endpoints=True: a few fixed forms
    # Every header gradio builds the page's own address from (the root its API calls and files go to), each by its
    # first value as gradio reads it: one missing here would let one request's address reach every later visitor.
    ADDRESS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")

    def __init__(self, app: ASGIApp, entries: int = 16):
        self.app = app
        self.entries = entries
        self._answers: dict[tuple, tuple[list, bytes]] = {}

    def key(self, scope: Scope) -> tuple | None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            return None
        path, query = route_path(scope), scope.get("query_string", b"")
        if not (path in self.PATHS and not query or path in self.QUERIED):
            return None
        first: dict[bytes, bytes] = {}
        for name, value in scope.get("headers") or ():
            first.setdefault(name.lower(), value)
        return (scope.get("path"), query, scope.get("root_path", ""), scope.get("scheme"),
                tuple(scope.get("server") or ()), *(first.get(name) for name in self.ADDRESS))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self.key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        kept = self._answers.pop(key, None)
        if kept is not None:
            self._answers[key] = kept  # the last asked, last to go
            headers, body = kept
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        start, chunks, complete = None, [], False

        async def keeping_send(message: Message) -> None:
            nonlocal start, complete
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                complete = not message.get("more_body", False)
            await send(message)

        await self.app(scope, receive, keeping_send)
        if (complete and start.get("status") == 200
                and not any(name.lower() == b"set-cookie" for name, _ in start.get("headers", ()))):
            self._answers[key] = (list(start.get("headers", ())), b"".join(chunks))
            while len(self._answers) > self.entries:
                self._answers.pop(next(iter(self._answers)))


class LoginRequired:
    """With --auth: only what draws the login page and logs in is open; every other route, gradio's own included
    (some, such as /gradio_api/cancel, /reset and /heartbeat, check no login themselves), answers 401 without one.
    The page at / is served to everyone (it is the login form), but without a login `strip_api_info` takes the API
    description out of it.

    Whether a request carries a login is asked of gradio over its own HTTP route, /gradio_api/login_check, with the
    request's cookies: no reach into gradio's token store."""

    # The login page's own requests
    PUBLIC = {"/", "/login", "/login/", "/logout", "/favicon.ico", "/theme.css", f"{API}/theme.css", "/manifest.json",
              "/robots.txt", "/pwa_icon", f"{API}/login_check", f"{API}/login_check/"}
    # launch() itself calls this without a login, once; after launch() it needs one like any other route
    STARTUP = {f"{API}/startup-events", f"{API}/startup-events/"}
    PUBLIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon/")
    UNAUTHENTICATED = {"detail": {"error": "Not authenticated", "auth_message": None}}  # gradio's own 401 body

    def __init__(self, app: ASGIApp, strip_api_info: Callable[[bytes], bytes],
                 launching: Callable[[], bool] = lambda: False):
        self.app = app
        self.strip_api_info = strip_api_info
        self.launching = launching

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
        elif (path in self.PUBLIC or path.startswith(self.PUBLIC_PREFIXES) or path in self.STARTUP and self.launching()
              or await self.logged_in(scope)):
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
    """With --auth: failed logins are counted per client address, per user name and for the whole server, each over
    `window_s` seconds; once any count the attempt belongs to is full, POST /login answers 429 (with Retry-After)
    without trying the password, the right one included, until that count's oldest failure is `window_s` old.

    Why three: a guesser with many addresses (IPv6, or a proxy that passes on any X-Forwarded-For) meets the per-name
    and server-wide counts; and every visitor through a --share tunnel or a proxy on this machine arrives from
    127.0.0.1, so a loopback address has no count of its own (one guesser there would lock the class out of it)
    and meets only the other two. The price of any such count: a guesser can keep new logins out for a while;
    visitors already logged in are not affected.

    Every attempt counts from the moment it arrives and is taken back when the password was right: guesses sent all
    at once cannot slip past the limit while the first ones are being checked.

    The address is the client's as uvicorn reports it: the connection's, unless the server was started with
    --behind-proxy (then uvicorn takes a proxy's X-Forwarded-For; see server.serve)."""

    PATHS = {"/login", "/login/"}
    ALL = ("all",)

    def __init__(self, app: ASGIApp, max_failures: int = limits.LOGIN_FAILURES_PER_ADDRESS,
                 window_s: float = limits.LOGIN_WINDOW_S, max_per_name: int = limits.LOGIN_FAILURES_PER_NAME,
                 max_all: int = limits.LOGIN_FAILURES_ALL, max_clients: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        self.app = app
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_per_name = max_per_name
        self.max_all = max_all
        self.max_clients = max_clients
        self.clock = clock
        self.failures: dict[Any, deque[float]] = {}

    def client(self, scope: Scope) -> str:
        return (scope.get("client") or ("?", 0))[0]

    def counts(self, address: str, name: str) -> list[tuple[Any, int, str]]:
        """(key, limit, whose) of every count an attempt from `address` for user `name` belongs to."""
        counts = [(("name", name[:100]), self.max_per_name, "for this user name"),
                  (self.ALL, self.max_all, "on this server")]
        if not is_loopback(address):
            counts.insert(0, (address, self.max_failures, "from your address"))
        return counts

    def recent(self, key, now: float) -> deque[float]:
        times = self.failures.get(key, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        return times

    def record_failure(self, key, now: float) -> None:
        if key not in self.failures and len(self.failures) >= self.max_clients:
            for other in list(self.failures):  # forget counts whose failures are all old, else the oldest entry
                if not self.recent(other, now):
                    del self.failures[other]
            if len(self.failures) >= self.max_clients:
                del self.failures[next(iter(self.failures))]
        times = self.recent(key, now)
        times.append(now)
        self.failures[key] = times

    def take_back(self, key, when: float) -> None:
        times = self.failures.get(key)
        if times and when in times:
            times.remove(when)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) not in self.PATHS:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:  # the client went away
            return
        receive = replay(body, receive)
        counts = self.counts(self.client(scope), await user_name(scope, body))
        now = self.clock()
        for key, limit, whose in counts:
            times = self.recent(key, now)
            if len(times) >= limit:
                wait = max(1, math.ceil(times[0] + self.window_s - now))
                await answer(send, 429, {"detail": f"Too many failed logins {whose}; try again in {wait} s."},
                             [(b"retry-after", str(wait).encode())])
                return
        for key, _, _ in counts:
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
                for key, _, _ in counts:
                    self.take_back(key, now)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body (BodyLimit, outside, has bounded it), or None if the client disconnected."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def read_call(receive: Receive) -> tuple[bytes | None, Any]:
    """(the body, its JSON or None when it is not JSON); (None, None) if the client disconnected."""
    body = await read_body(receive)
    if body is None:
        return None, None
    try:
        return body, json.loads(body)
    except ValueError:
        return body, None


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives `body` again, then whatever the connection says next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def user_name(scope: Scope, body: bytes) -> str:
    """The `username` field of a login form (urlencoded or multipart, as gradio's /login takes it); "" if none."""
    try:
        form = await Request(scope, replay(body, _disconnected)).form()
        name = form.get("username")
        await form.close()
    except Exception:  # noqa: BLE001 - a malformed form: gradio refuses it; here it has no name
        return ""
    return name if isinstance(name, str) else ""


async def _disconnected() -> Message:
    return {"type": "http.disconnect"}


# --- sessions, and the views' server functions ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Caller:
    """Who is asking, for the code that runs while a request is answered: the client address, whether this route may
    create a session, and (on the server-function route) the session that calls."""

    address: str
    may_create_session: bool = True
    session: str | None = None
    # what the visitor's language is read from (common.language_of): the page's address and the browser's languages
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)


LANGUAGE_HEADERS = (b"referer", b"accept-language")
LANGUAGE_HEADER_CHARS = 2000
CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("bertviz_caller", default=None)


class SessionRefused(Exception):
    """A session this route may not create (the server functions answer only sessions that exist)."""


SESSION_GONE = ("This page's session has ended on the server (it was idle, or the server restarted): reload the page "
                "and analyze again.")


def in_callers_language(english: str) -> str:  # the guards answer in front of gradio: no handler speaks for the page
    return i18n.translate(english, i18n.language_of_headers(CALLER.get().headers if CALLER.get() else {}))


class SessionBudget:
    """New sessions per client address: gradio creates a session for any new session hash a request carries, so 600
    requests with random hashes pushed every visitor out of the 500 sessions kept. Here each address holds at most
    `per_address` sessions; a new one past that replaces that address's least recently used one, no one else's.
    `admit` is called (gradio_internals.bound_new_sessions) whenever gradio is about to create a session."""

    def __init__(self, per_address: int = limits.SESSIONS_PER_ADDRESS, max_addresses: int = 10_000):
        self.per_address = per_address
        self.max_addresses = max_addresses
        self.sessions: dict[str, dict[str, None]] = {}  # address -> its sessions, oldest first

    def admit(self, session: str, last_used: Callable[[str], Any]) -> list[str]:
        """The sessions to forget so that `session` can be created (`last_used(s)`: when s was last used, None once
        gradio no longer keeps it); raises SessionRefused where the route may create none."""
        caller = CALLER.get()
        if caller is None:  # gradio's own work between requests (the queue restoring a session): not a visitor
            return []
        if not caller.may_create_session:
            raise SessionRefused(SESSION_GONE)
        mine = {s: None for s in self.sessions.pop(caller.address, {}) if last_used(s) is not None}
        self.sessions[caller.address] = mine  # the most recent address last
        gone = []
        while len(mine) >= self.per_address:
            oldest = min(mine, key=last_used)
            del mine[oldest]
            gone.append(oldest)
        mine[session] = None
        while len(self.sessions) > self.max_addresses:  # only the bookkeeping of the oldest address goes
            del self.sessions[next(iter(self.sessions))]
        return gone


class ClientSessions:
    """Tells the code below who is asking (CALLER): the client's address, and whether the route may create a session
    (every route but the server functions')."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = (scope.get("client") or ("?", 0))[0]
        headers = {name.decode("latin-1"): value.decode("latin-1")[:LANGUAGE_HEADER_CHARS]
                   for name, value in scope.get("headers") or () if name in LANGUAGE_HEADERS}
        token = CALLER.set(Caller(address, route_path(scope) not in ServerFunctions.PATHS, headers=headers))
        try:
            await self.app(scope, receive, send)
        finally:
            CALLER.reset(token)


class ServerFunctions:
    """gradio's /gradio_api/component_server (the views' server functions) outside the queue: it answered any session
    hash by creating a session, and an unknown component id with a bare 500 and a traceback. Here only a session that
    exists is answered (the page is told in words to reload otherwise: `{"error": ...}`, as our server functions
    answer), the calling session is known to the function (CALLER), an unknown component id is answered in words
    (404), and after a large answer `release()` gives the freed memory back."""

    PATHS = {f"{API}/component_server", f"{API}/component_server/"}
    LARGE = 2**20

    def __init__(self, app: ASGIApp, session_exists: Callable[[str], bool], release: Callable[[], None]):
        self.app = app
        self.session_exists = session_exists
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) not in self.PATHS:
            await self.app(scope, receive, send)
            return
        body, call = await read_call(receive)
        if body is None:
            return
        session = call.get("session_hash") if isinstance(call, dict) else None
        if not isinstance(session, str) or not self.session_exists(session):
            await answer(send, 200, {"error": in_callers_language(SESSION_GONE)})
            return
        caller = CALLER.get() or Caller("?")
        token = CALLER.set(dataclasses.replace(caller, may_create_session=False, session=session))
        started, sent = False, 0

        async def watched_send(message: Message) -> None:
            nonlocal started, sent
            started = True
            sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, replay(body, receive), watched_send)
        except (KeyError, SessionRefused) as err:
            if started:
                raise
            gone = isinstance(err, SessionRefused)
            await answer(send, 200 if gone else 404, {"error": in_callers_language(
                SESSION_GONE if gone else "This page has no component with that id; reload the page.")})
        finally:
            CALLER.reset(token)
        if sent > self.LARGE:  # in a worker thread: a trim of a large heap can take tens of milliseconds
            await anyio.to_thread.run_sync(self.release)


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


class EventCalls:
    """gradio's routes that run an event by number or by name (POST /gradio_api/queue/join, /run/<name>,
    /api/<name>) answered a number no event has, an event that runs only in the page (no Python function), or an
    unknown name with a bare 500 and a traceback in the log (0.8-5.3 kB each). Each is answered here in words before
    gradio sees it. `events()` gives (the numbers of the events with a Python function, the numbers of those without,
    the API names)."""

    RUN = (f"{API}/run/", f"{API}/api/")
    JOIN = {f"{API}/queue/join", f"{API}/queue/join/"}

    def __init__(self, app: ASGIApp, events: Callable[[], tuple[set[int], set[int], set[str]]]):
        self.app = app
        self.events = events

    def refusal(self, path: str, call: Any) -> str | None:
        """Why this call names no event gradio can run, or None."""
        backend, page_only, names = self.events()
        name = next((path[len(p):].strip("/") for p in self.RUN if path.startswith(p)), None)
        if name not in (None, "predict"):
            return None if name in names else f"No API endpoint named /{name[:100]}."
        index = call.get("fn_index") if isinstance(call, dict) else None
        if index is None:
            return None  # gradio finds the event another way (or refuses in words itself)
        if not isinstance(index, int) or isinstance(index, bool):
            return "fn_index must be a whole number: the number of one of the page's events."
        if index in page_only:
            return f"Event number {index} runs in the page only; there is nothing to run on the server."
        return None if index in backend else f"No event number {index}; reload the page."

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" and scope["method"] == "POST" else ""
        if not (path in self.JOIN or path.startswith(self.RUN)):
            await self.app(scope, receive, send)
            return
        body, call = await read_call(receive)
        if body is None:
            return
        why = self.refusal(path, call)
        if why is not None:
            await answer(send, 404, {"error": why})
            return
        await self.app(scope, replay(body, receive), send)
