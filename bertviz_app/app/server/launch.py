"""Serving the app: safe defaults (127.0.0.1, no run history, no monitoring page, no MCP server, no extra file
paths), bounds on what any visitor can make the server hold or do, a clear line when a --share link cannot be made,
and gradio's own banner replaced by ours.

What is bounded, and how (docs/guide/limits.md says it for operators):
- request bodies: `max_body_bytes` on every route, refused before they are read (guards.BodyLimit);
- the model: every event that runs it goes through the queue (`queue(api_open=False)`: gradio's direct
  /gradio_api/run/ route refuses queued events), at most `max_queue` waiting; `concurrency` forward passes at once;
- uploads: refused (the app has no file input; guards.NoUploads), and gradio's own cap set as well;
- sessions: at most `max_sessions` (gradio's `state_session_capacity`), at most `sessions_per_address` per client
  address (a new one past that replaces that address's least recently used; guards.SessionBudget), those idle for
  `session_idle_s` forgotten (gradio_internals.expire_idle_sessions, every minute), and none keeps a copy of what
  its events sent to the page (gradio_internals.keep_values_out_of_sessions);
- the views' server functions (outside the queue): only for a session that exists and only on its own analyses, in
  a lane of their own with a rate per session (views_host.ExportLane; guards.ServerFunctions);
- client addresses: the connection's; a proxy's X-Forwarded-For only with `behind_proxy`;
- with `auth`: every route but the login page's needs a login, the login page does not embed the API description,
  failed logins are limited per address, per user name and in all (guards.LoginRequired, guards.LoginThrottle);
- event values: checked before gradio processes them, refused in words that name the field
  (common.check_inputs through gradio_internals.check_inputs_first, installed by build_demo).
The Run cache is bounded by bytes in the Explorer (`cache_mb`, `--cache-mb`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import logging
import os
import socket
import sys
import threading

import gradio as gr
from starlette.middleware import Middleware

from ... import i18n, lessons, limits, views
from ...explorer import release_freed_memory
from ...styles import STYLES
from . import class_polls, gradio_internals, guards, polls

log = logging.getLogger("bertviz_app.app")

# gradio's default theme, with bold text in the fonts' bold files: its semibold (600) files are small subsets ("A", "B"
# and some Cyrillic), so a bold "All heads" took its "A" from Source Sans Pro and the rest from a system font, which
# read as small capitals. Text asked for at 600 is drawn from the 700 files, whose glyphs are all there.
THEME = gr.themes.Default(
    font=(gr.themes.LocalFont("Source Sans Pro", weights=(400, 700)), "ui-sans-serif", "system-ui", "sans-serif"),
    font_mono=(gr.themes.LocalFont("IBM Plex Mono", weights=(400, 700)), "ui-monospace", "Consolas", "monospace"))
MAX_BODY_BYTES = limits.MAX_BODY_BYTES
MAX_SESSIONS = limits.MAX_SESSIONS
SESSION_IDLE_S = limits.SESSION_MINUTES * 60
MAX_QUEUE = limits.MAX_QUEUE


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def listening_line(host: str, port: int) -> str:
    """What the startup line says: the address the server listens on, and for a wildcard address how to reach it."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if host.strip("[]") in ("0.0.0.0", "::"):
        others, here = ("every IPv4 interface", "127.0.0.1") if host == "0.0.0.0" else ("every interface", "[::1]")
        return (f"listening on {shown}:{port} ({others} of this machine): open http://{here}:{port}/ here, or "
                f"http://<this machine's address>:{port}/ from another machine")
    return f"serving on http://{shown}:{port}/"


def session_janitor(demo: gr.Blocks, idle_s: float, every_s: float):
    """A FastAPI lifespan (passed through launch's app_kwargs) that forgets idle sessions every `every_s` seconds while
    the server runs."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async def sweep():
            while True:
                await asyncio.sleep(every_s)
                try:
                    gone = gradio_internals.expire_idle_sessions(demo, idle_s)
                except Exception:  # a gradio that changed shape: the session cap still holds; say it once
                    log.exception("could not expire idle sessions; the session cap still applies")
                    return
                if gone:
                    log.info("forgot %d idle session(s)", gone)

        task = asyncio.create_task(sweep())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return lifespan


# Events outside the queue that a page calls by itself (a timer, a click), each answered by reading what the server
# holds: the progress polls, the Pretrain tab's views a poll asks for (~1 MB each; 612 calls in 10 s from one thread
# took another visitor's analysis from 0.03 to 0.36 s), and a click on a corpus point (324 calls in 10 s).
# The page's language (views/js/app.mjs): ?lang=, else the browser's, for our views and gradio's labels alike.
LANGUAGE_SCRIPT = "<script>window.BertvizViews.startLanguage(window);</script>"

POLLED = ("finetune_progress", "_finetune_progress", "pretrain_progress", "_pretrain_progress", "_pretrain_views",
          "_corpus_open")


def middleware(demo: gr.Blocks, max_body_bytes: int, auth: bool,
               launched: threading.Event | None = None) -> list[Middleware]:
    """The guards, outermost first: the body limit before anything reads a body, the login before the server
    functions. `launched`: set once launch() has returned (until then its own call needs no login)."""
    launched = launched or threading.Event()
    stack = [Middleware(guards.BodyLimit, max_bytes=max_body_bytes), Middleware(guards.NoUploads),
             Middleware(guards.ClientSessions)]
    if auth:
        stack += [Middleware(guards.LoginRequired, strip_api_info=gradio_internals.strip_api_info,
                             launching=lambda: not launched.is_set()),
                  Middleware(guards.LoginThrottle)]
    else:  # with a login the page differs by visitor: built for each
        stack.append(Middleware(guards.PageCache))
    # the class polls' routes: after the login (a phone logs in as any visitor does), before gradio's own
    return stack + [Middleware(class_polls.PollRoutes),
                    Middleware(guards.ServerFunctions,
                               session_exists=lambda session: gradio_internals.session_exists(demo, session),
                               release=release_freed_memory),
                    Middleware(guards.CallErrors),
                    Middleware(guards.EventCalls, events=functools.partial(gradio_internals.events, demo)),
                    Middleware(polls.PollRate, polls=functools.partial(gradio_internals.events_named, demo, POLLED))]


@contextlib.contextmanager
def forwarded_headers(trusted: bool):
    """uvicorn takes the client address from X-Forwarded-For when the connection comes from FORWARDED_ALLOW_IPS
    (127.0.0.1 by default), which it reads when gradio's launch() configures it. Without `trusted` that list is empty
    while launch() runs: anyone on this machine, or any visitor through a --share tunnel, could otherwise name any
    address and get a fresh login budget with each."""
    if trusted:
        yield
        return
    before = os.environ.get("FORWARDED_ALLOW_IPS")
    os.environ["FORWARDED_ALLOW_IPS"] = ""
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FORWARDED_ALLOW_IPS", None)
        else:
            os.environ["FORWARDED_ALLOW_IPS"] = before


def serve(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int = 7860, share: bool = False,
          auth: list[tuple[str, str]] | None = None, block: bool = True, max_queue: int = MAX_QUEUE,
          max_body_bytes: int = MAX_BODY_BYTES, max_sessions: int = MAX_SESSIONS,
          session_idle_s: float = SESSION_IDLE_S, sessions_per_address: int = limits.SESSIONS_PER_ADDRESS,
          behind_proxy: bool = False) -> str:
    """Launch `demo` with safe defaults and return the local URL; with `block`, serve until Ctrl-C.

    Safe defaults: bound to 127.0.0.1 unless told otherwise; no run history (gradio 6 would otherwise record
    every call in the visitor's browser and offer a /gradio_api/runs page), no monitoring page, no MCP server,
    no extra file paths (gradio serves only its own cache of files our handlers return, and we return none), no
    OpenAPI page of gradio's routes. The bounds are listed in this module's docstring. `behind_proxy`: take the
    client address from X-Forwarded-For when a proxy on this machine sends it (uvicorn's FORWARDED_ALLOW_IPS).
    A --share link that cannot be made (offline) is reported in one clear line while the local server goes on."""
    # api_open=False: gradio's /gradio_api/run/<name> (and /api/<name>) no longer run queued events directly, which
    # skipped the queue, its size limit and the model's concurrency limit. Every event that runs the model is queued.
    # status_update_rate: every waiting visitor's place in the queue once a second, not each time an event starts
    # (gradio's "auto": with 50 visitors waiting, 50 messages per event, ~7,500 for a class's 150 inputs, all sent
    # from the one thread that also answers every request).
    demo.queue(max_size=max_queue, default_concurrency_limit=4, api_open=False, status_update_rate=1)
    gradio_internals.keep_values_out_of_sessions(demo)
    gradio_internals.skip_event_analytics(demo)
    launched = threading.Event()
    app_kwargs = {"middleware": middleware(demo, max_body_bytes, bool(auth), launched), "openapi_url": None,
                  "lifespan": session_janitor(demo, session_idle_s, every_s=min(60.0, session_idle_s / 4))}
    captured = io.StringIO()
    budget = guards.SessionBudget(sessions_per_address)
    # gradio's banner and its long share advice: we say it shorter
    # the strings some language says otherwise ("Tokens" is Spanish too: nothing to mark)
    gradio_internals.translate_static_text(demo, {key for lang in i18n.LANGUAGES[1:]
                                                  for key, said in i18n.page_catalogue(lang).items() if said != key})
    with contextlib.redirect_stdout(captured), forwarded_headers(behind_proxy):
        demo.launch(server_name=host, server_port=port or free_port(host), share=share, auth=auth, theme=THEME,
                    prevent_thread_lock=True, quiet=True, show_error=False, run_history=False, ssr_mode=False,
                    mcp_server=False, enable_monitoring=False, footer_links=["api", "settings"],
                    css_paths=[STYLES / "app.css", STYLES / "app-access.css"],
                    head=views.script_element() + lessons.script_element() + LANGUAGE_SCRIPT,
                    i18n=gr.I18n(**{lang: i18n.page_catalogue(lang) for lang in i18n.LANGUAGES[1:]}),
                    app_kwargs=app_kwargs, max_file_size=max_body_bytes, state_session_capacity=max_sessions)
    launched.set()
    gradio_internals.bound_new_sessions(demo, budget)
    gradio_internals.api_description_per_request(demo)
    log.debug("gradio said: %s", captured.getvalue())
    url = demo.local_url
    print(f"bertviz-app: {listening_line(host, demo.server_port)} (Ctrl-C stops)", flush=True)
    if share:
        if demo.share_url:
            print(f"bertviz-app: public link {demo.share_url}", flush=True)
        else:
            print(f"bertviz-app: could not create the public --share link: gradio.live cannot be reached (no "
                  f"internet connection, or a firewall blocks it). The app keeps serving locally on {url}",
                  file=sys.stderr, flush=True)
    if block:
        demo.block_thread()
    return url
