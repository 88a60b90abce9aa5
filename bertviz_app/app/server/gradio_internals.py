"""The places the app reaches into gradio's internals, kept in one module so that a gradio upgrade that changes them
fails tests loudly (tests/test_app.py::test_gradio_internals_are_as_the_workaround_expects and the
test_gradio_internals_* tests of tests/test_limits.py) instead of quietly undoing what they do:

- forget_replaced_components: sessions no longer grow with every analysis;
- check_inputs_first: every event's values are checked, in words that name the field, before gradio processes them;
- strip_api_info: the login page does not carry the API description;
- expire_idle_sessions: sessions idle for long are forgotten;
- bound_new_sessions: new sessions are bounded per client address (guards.SessionBudget decides), and made without
  gradio's copy of every block's config (lean_session);
- keep_values_out_of_sessions: a session does not keep a copy of what each event sent to the page;
- skip_event_analytics: no table of the last 10,000 events rebuilt after each one (for a monitoring page we do not
  offer);
- events: which event numbers have a Python function, which run only in the page, and the API names (for
  guards.EventCalls);
- api_description_per_request: the API description (its code snippets name the server's address) is built for the
  request that asks, never kept from the first request after start-up for everyone;
- current_request, current_session_hash: the request (its language) and the session of the event being answered;
- translate_static_text: the page's words marked for gradio's own translation (launch's i18n), and, in the page,
  views/js/app.mjs's startLanguage, which moves gradio's language to a page's ?lang= through its front end's
  `changeLocale` (tests/test_i18n_browser.py pins both).

The page also relies on two behaviours of gradio's front end, described where they are used (tabs/base.py,
tab_step_js): a js-only step that throws stops the `.success` steps after it, and a tab's `.select` fires when an event
selects it.

Everything else the server does (body limit, uploads, login, queue, session cap) uses gradio's public `launch()`
and `queue()` arguments or plain ASGI middleware (guards.py).
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import inspect
import re
import threading
from types import SimpleNamespace

import gradio as gr


# --- components a prop update replaced -------------------------------------------------------------------------------
# A prop update (gr.update(choices=...)) makes gradio build a new component for the session. Gradio 6.31 then files
# that component under its own new id as well, the next time it is an input, and never drops it: a session grew by
# about three components (~15 kB) per analysis, for as long as it lived. Gradio looks components up by the page's own
# ids, and files the current replacement of each under its new id while it prepares an event, so only replacements
# that have since been replaced again can go.
def session_blocks(demo: gr.Blocks, session_hash: str | None):
    """(blocks, config_values) of one session's state, or None when gradio keeps none for it (or keeps it in a shape
    this code does not know: then it raises AttributeError)."""
    state = demo.state_holder.session_data.get(session_hash)
    if state is None:
        return None
    return state.blocks_config.blocks, state.config_values


def forget_replaced_components(demo: gr.Blocks, request: gr.Request | None) -> None:
    """Drop from the visitor's session the components that a prop update replaced and that were replaced again
    since. Best effort: if gradio's internals change shape, the session grows as it did before."""
    try:
        found = session_blocks(demo, getattr(request, "session_hash", None))
        if found is None:
            return
        blocks, config_values = found
        live = {id(blocks[k]) for k in demo.blocks if k in blocks}
        for key in [k for k, block in blocks.items() if k not in demo.blocks and id(block) not in live]:
            blocks.pop(key, None)
            config_values.pop(key, None)
    except (AttributeError, KeyError, RuntimeError):  # RuntimeError: another event changed the dict meanwhile
        pass


# --- checking an event's values before gradio processes them --------------------------------------------------------
# Gradio runs each input component's `preprocess` on the values a request sent before our handler runs. A wrong type
# there (text for a slider) fails inside gradio, which then answers "Error: None" unless show_error is on (and then
# with its own internals); a value it echoes in a message (an unpaired surrogate in the model name) breaks the event
# stream with an exception in the ASGI log. Blocks.preprocess_data(block_fn, inputs, state, explicit_call) is where
# every event's values pass, queued or not, so the app's own check goes in front of it.
_INDEX = re.compile(r"input component at index (\d+)")


def check_inputs_first(demo: gr.Blocks, check) -> None:
    """Make `check(components, values)` (which raises gr.Error in words) run on every event's values before gradio's
    own processing; anything gradio still cannot process is refused in words that name the field, never without
    words. Raises AttributeError/TypeError at once if gradio no longer has preprocess_data in the expected shape."""
    original = demo.preprocess_data
    if getattr(original, "checks_inputs_first", False):
        return
    signature = inspect.signature(original)
    if not {"block_fn", "inputs"} <= set(signature.parameters):
        raise TypeError(f"gradio's Blocks.preprocess_data{signature} no longer takes (block_fn, inputs, ...)")

    async def preprocess_data(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        components, values = list(arguments["block_fn"].inputs), arguments["inputs"]
        check(components, list(values) if isinstance(values, (list, tuple)) else [])
        try:
            return await original(*args, **kwargs)
        except gr.Error as err:  # gradio's own words: without the traceback gradio would log, and kept short
            message = str(err.message)
            raise gr.Error(message if len(message) <= 300 else message[:299] + "…", print_exception=False) from None
        except Exception as err:  # noqa: BLE001 - gradio's processing of a visitor's value: say which one
            found = _INDEX.search(str(err))
            index = int(found.group(1)) if found else None
            name = (getattr(components[index], "label", None) if index is not None and index < len(components)
                    else None)
            raise gr.Error(f"{name} cannot take the value that was sent." if name else
                           "One of the values sent to this view has the wrong type; see the API page for what each "
                           "endpoint takes.", print_exception=False) from None

    preprocess_data.checks_inputs_first = True
    demo.preprocess_data = preprocess_data


# --- the login page without the API description ---------------------------------------------------------------------
# gradio's page template (templates/frontend/index.html and share.html) embeds the whole API description, endpoint
# names, parameters, model names and examples included, as `window.gradio_api_info = {...};` even in the page that
# only shows the login form. An empty description in its place keeps the login form as it was (with none at all, the
# front end would ask the server for it, and be refused); after the login, the page comes again, whole. gradio
# escapes '<' in that JSON, so the first ";</script>" ends it.
_API_INFO = re.compile(rb"window\.gradio_api_info = .*?;</script>", re.DOTALL)
EMPTY_API_INFO = b'window.gradio_api_info = {"named_endpoints": {}, "unnamed_endpoints": {}};</script>'


def strip_api_info(page: bytes) -> bytes:
    """The page with an empty API description in place of gradio's; unchanged if it has none."""
    return _API_INFO.sub(EMPTY_API_INFO, page, count=1)


def embeds_api_info(page: bytes) -> bool:
    return _API_INFO.search(page) is not None


# --- idle sessions --------------------------------------------------------------------------------------------------
# gradio keeps every visitor's session (a copy of the page's component configuration, ~0.2 MB here) until
# `state_session_capacity` newer ones push it out; gr.State(time_to_live=...) frees only the State's value, timed
# from its last write. Whole sessions idle for longer than a limit go here, by gradio's own record of their last use.
def expire_idle_sessions(demo: gr.Blocks, idle_seconds: float) -> int:
    """Forget the sessions not used for `idle_seconds`; returns how many went. A visitor who comes back later gets a
    fresh session (the page asks them to analyze again)."""
    holder = demo.state_holder
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=idle_seconds)
    with holder.lock:
        idle = [session for session, last in list(holder.time_last_used.items()) if last < cutoff]
        for session in idle:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
    return len(idle)


def session_exists(demo: gr.Blocks, session_hash: str) -> bool:
    return session_hash in demo.state_holder.session_data


# --- new sessions ---------------------------------------------------------------------------------------------------
# StateHolder.__getitem__(session_hash) creates a session for any hash it has not seen, on every route that carries
# one (queue/join, run/predict, component_server). The running app's holder becomes an instance of a subclass that
# first asks `budget.admit(hash, last_used)` which sessions to forget (or raises, where none may be created).
def bound_new_sessions(demo: gr.Blocks, budget) -> None:
    """Make every session gradio creates from now on pass `budget.admit` first (demo must be launched). Raises
    AttributeError/TypeError at once if gradio's StateHolder no longer has the expected shape."""
    holder = demo.state_holder
    base = type(holder)
    if getattr(base, "bounded_by", None) is not None:
        base.bounded_by = budget
        return
    for name in ("session_data", "time_last_used", "lock"):
        getattr(holder, name)
    lock = threading.Lock()

    class BoundedStateHolder(base):
        bounded_by = budget

        def __getitem__(self, session_id):
            if session_id not in self.session_data:
                with lock:
                    gone = self.bounded_by.admit(session_id, lambda s: self.time_last_used.get(s)
                                                 if s in self.session_data else None)
                with self.lock:
                    for session in gone:
                        self.session_data.pop(session, None)
                        self.time_last_used.pop(session, None)
                self.session_data.setdefault(session_id, lean_session(self.blocks))
            return super().__getitem__(session_id)

    holder.__class__ = BoundedStateHolder


def lean_session(demo: gr.Blocks):
    """A new session's state without gradio's copy of every block's page config. SessionState(blocks) builds it
    from `blocks.blocks` (paid by each new visitor while a class arrives; docs/ARCHITECTURE.md, "Measured") for its
    deep-link route, which this app does not offer; gradio builds a block's entry when an event first touches it."""
    from gradio.state_holder import SessionState

    return SessionState(SimpleNamespace(default_config=demo.default_config, blocks={}))


# --- what each event sent to the page -------------------------------------------------------------------------------
# Before and after each event's function, gradio writes the values it received and returned into the session's
# `config_values` (Blocks.preprocess_data / postprocess_data -> SessionState._update_value_in_config), where only its
# deep-link route (which this app does not offer) reads them. Each analysis left the views' payload there (2.9 MB at
# 256 tokens), and figures and tables beside it: a session weighed what its last answers did, 500 of them ~1.4 GB.
def keep_values_out_of_sessions(demo: gr.Blocks) -> None:
    """After gradio has stored an event's input and output values in the session, drop them again. Raises TypeError at
    once if gradio's preprocess_data / postprocess_data no longer take (block_fn, ..., state)."""
    for name, which in (("preprocess_data", "inputs"), ("postprocess_data", "outputs")):
        original = getattr(demo, name)
        if getattr(original, "keeps_values_out", False):
            continue
        # the class's method: `original` may be a wrapper (check_inputs_first's) that takes (*args, **kwargs)
        signature = inspect.signature(getattr(type(demo), name).__get__(demo))
        if not {"block_fn", "state"} <= set(signature.parameters):
            raise TypeError(f"gradio's Blocks.{name}{signature} no longer takes (block_fn, ..., state)")

        def wrap(original, signature, which):
            @functools.wraps(original)
            async def without_values(*args, **kwargs):
                result = await original(*args, **kwargs)
                arguments = signature.bind(*args, **kwargs).arguments
                forget_values(arguments.get("state"), getattr(arguments["block_fn"], which, None) or [])
                return result

            without_values.keeps_values_out = True
            return without_values

        setattr(demo, name, wrap(original, signature, which))


def forget_values(state, blocks) -> None:
    config_values = getattr(state, "config_values", None)
    if not isinstance(config_values, dict):
        return
    for block in blocks:
        props = (config_values.get(getattr(block, "_id", None)) or {}).get("props")
        if isinstance(props, dict) and props.get("value") is not None:
            props["value"] = None


# --- the queue's analytics ------------------------------------------------------------------------------------------
# After every event gradio 6.31 rebuilds a pandas summary of the last 10,000 events' records (Queue.
# compute_analytics_summary, for the monitoring page, which serve() turns off): 2.5 ms of CPU per event on a fresh
# server and 5 ms once it has served 10,000, out of ~30 ms for a new 32-token input. The summary is recomputed when
# `events_recorded - event_count_at_last_cache >= ANAYLTICS_CACHE_FREQUENCY` (gradio's spelling), so a frequency no
# count reaches keeps it from ever being built, and one record kept is all the queue's status updates read.
def skip_event_analytics(demo: gr.Blocks) -> None:
    """Keep the queue of `demo` (after demo.queue()) from summarizing its events after each one. Raises
    AttributeError at once if gradio's Queue no longer has these settings."""
    queue = demo._queue
    for name in ("ANAYLTICS_CACHE_FREQUENCY", "ANALYTICS_MAX_EVENTS", "compute_analytics_summary"):
        getattr(queue, name)
    queue.ANAYLTICS_CACHE_FREQUENCY = float("inf")
    queue.ANALYTICS_MAX_EVENTS = 1


# --- the session of the event being answered -------------------------------------------------------------------------
def current_request() -> gr.Request | None:
    """The request of the event whose function is running (gradio sets it in a context variable before calling it),
    or None outside an event."""
    from gradio.context import LocalContext

    return LocalContext.request.get(None)


def current_session_hash() -> str | None:
    """The session hash of the event whose function is running, or None outside an event."""
    return getattr(current_request(), "session_hash", None)


# --- the API description --------------------------------------------------------------------------------------------
# gradio 6.31 builds the API description of /gradio_api/info and /gradio_api/openapi.json once, from the first request
# after start-up (App.api_info), code snippets and all: `Client("https://evil.example")` for every later visitor when
# that request sent X-Forwarded-Host: evil.example. The running app becomes an instance of a subclass whose `api_info`
# lives only as long as the request that built it (a context variable: each request runs in a context of its own).
# guards.PageCache still keeps the answer per address, so a class pays for it once per address, not once per visitor.
_API_INFO_OF_REQUEST: contextvars.ContextVar = contextvars.ContextVar("api_info", default=None)


def api_description_per_request(demo: gr.Blocks) -> None:
    """Make gradio's kept API description last one request (demo must be launched). Raises AttributeError at once
    if the app no longer has `api_info`."""
    app = demo.server_app
    base = type(app)
    if getattr(base, "api_info_per_request", False):
        return
    if "api_info" not in vars(app):
        raise AttributeError("gradio's app keeps no api_info of its own: see api_description_per_request")
    del app.api_info  # the instance's own attribute would hide the class's property

    class AppWithoutKeptApiInfo(base):
        api_info_per_request = True
        api_info = property(lambda self: _API_INFO_OF_REQUEST.get(),
                            lambda self, value: _API_INFO_OF_REQUEST.set(value))

    app.__class__ = AppWithoutKeptApiInfo


# --- events by number and name --------------------------------------------------------------------------------------
def events(demo: gr.Blocks) -> tuple[set[int], set[int], set[str]]:
    """(numbers of the events with a Python function, numbers of those that run only in the page, API names)."""
    backend = {i for i, fn in demo.fns.items() if fn.fn is not None}
    names = {fn.api_name for fn in demo.fns.values() if isinstance(fn.api_name, str)}
    return backend, set(demo.fns) - backend, names


def events_named(demo: gr.Blocks, names: tuple[str, ...]) -> set[int]:
    """The numbers of the events whose API name is one of `names`."""
    return {i for i, fn in demo.fns.items() if fn.api_name in names}


# --- the page's words in the visitor's language -------------------------------------------------------------------------
# gradio's front end translates a label, an info, a placeholder, a button's or a Markdown's text, and any
# `__i18n__{...}` marker inside an HTML value, through the catalogues given to launch(i18n=gr.I18n(...)), in the
# language it chose from the browser (app.mjs's startLanguage moves it to a page's ?lang=). Our strings are written in
# English where they are built; here each one the catalogue holds becomes gradio's marker, once, before launch, so
# that adding a string to the catalogue is the whole change. A string the catalogue lacks stays English. Gradio 6.31
# reads one marker in an HTML value, not two (the second shows as its marker): an HTML value names one catalogued
# text at most.
_HTML_TEXT = re.compile(r">([^<>]+)<")


def translate_static_text(demo: gr.Blocks, known) -> int:
    """Mark every label, info, placeholder, tab name, dropdown choice, button and Markdown text of `demo` that `known`
    (English -> translation) holds, and each text between two tags of an HTML value, for gradio's translation.
    Returns how many were marked."""
    from gradio.i18n import I18nData

    marked = 0

    def mark(text):
        nonlocal marked
        marked += 1
        return I18nData(text)

    for block in demo.blocks.values():
        for attr in ("label", "info", "placeholder"):
            value = getattr(block, attr, None)
            if isinstance(value, str) and value in known:
                setattr(block, attr, mark(value))
        if isinstance(block, gr.Dropdown):
            # a choice's label that is not its value (gradio's dropdown translates each: live_i18n); one that is its
            # value is data, a model's name or a token, never translated
            block.choices = [(str(mark(label)), value) if isinstance(label, str) and label != value and label in known
                             else (label, value) for label, value in block.choices]
        value = getattr(block, "value", None)
        if isinstance(block, (gr.Button, gr.Markdown)) and isinstance(value, str) and value in known:
            block.value = str(mark(value))
        elif isinstance(block, gr.HTML) and isinstance(value, str):
            def swap(found):
                core = found.group(1).strip()
                return f">{found.group(1).replace(core, str(mark(core)))}<" if core in known else found.group(0)
            block.value = _HTML_TEXT.sub(swap, value)
    return marked
