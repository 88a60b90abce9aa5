"""ASGI middleware in front of gradio's routes: what a request may make the server read, store or reveal before gradio
looks at it. Each guard is a small class that FastAPI builds as `Middleware(Guard, **options)`; server.py passes them
to `launch(app_kwargs={"middleware": [...]})`, the public way to put middleware inside a gradio app. Nothing here
imports gradio: the guards speak HTTP (paths, headers, status codes).

- BodyLimit: no request body larger than `max_bytes`, on every route, refused before anything reads it.
- NoUploads: this app has no file input; gradio's upload routes would store any file, so they answer 403.
- CallErrors: the curl-style `/gradio_api/call/v2/...` route answers a missing or unknown argument in words (422)
  instead of a 500 and a traceback in the log.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

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


def header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value
    return None


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
        declared = header(scope, b"content-length")
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
