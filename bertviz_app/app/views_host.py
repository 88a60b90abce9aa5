"""Our interactive attention views (bertviz_app.views) inside the page: each host is one gr.HTML whose value is an
analysis' payload; the views draw it in the browser, and moving through layers, heads and tokens never asks the
server. The server is asked only for what the views cannot have with them: the query/key blob (the first time that
view opens), an offline copy of the page, or a CSV of exact numbers, each read from the Run in the explorer's cache,
never with a forward pass.

One `ViewsHost` serves every host of the page (the analysis under the input, the two sides of compare mode): it
remembers which Run each value's key stands for and which session it was made for. The server functions run outside
gradio's queue, so they are bounded here: a key is a keyed hash (a secret of this process) of the session and the
input, so nobody can derive it from a text; only the session that made it is answered; and every call waits in a
small lane of its own (`ExportLane`: a few at once, a few more waiting, a rate per session).

Permalinks (the main host only): the address follows the visitor
(`?a=...&b=...&model=...&layer=2&head=5&token=3&tab=matrix`); layout.py restores a, b and model from it, the
host's script (bertviz_app/views/js/gradio-host.mjs) layer, head, token and tab. Not `view`: Gradio's own page reads
that parameter.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass

import anyio
import gradio as gr

from .. import limits, views
from ..run import MATRICES, Run
from .server import gradio_internals, guards
from .common import Models, in_page_language, index_value, refuse, tr_of, user_errors

log = logging.getLogger(__name__)

# A CSV larger than this is refused (choose one head): all 12 heads of a layer at 256 tokens are 786,432 rows, 24 MB
# of text (20 such requests at once took a server from 0.9 GB to 2.5 GB when each built a pandas DataFrame).
MAX_CSV_ROWS = limits.MAX_CSV_ROWS

# The script of a host is bertviz_app/views/js/gradio-host.mjs, part of the views' script that app.serve puts in
# the page's <head> once (three hosts carried 430 kB of it in the page's config when it was in every js_on_load, and
# gradio deep-copies the config for every /config request). js_on_load only waits for that script and hands the host
# what Gradio gives it; the props are documented in gradio-host.mjs.
SCRIPT_MISSING = ("The attention views cannot start: their script is missing from this page. Serve the app with "
                  "bertviz_app.app.serve (or the bertviz-app command), which adds it.")
HOST_SCRIPT = """
const host = element.querySelector(".bv-host");
(async () => {
  for (let waited = 0; !window.BertvizViews && waited < 10000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!window.BertvizViews) {
    host.textContent = MISSING;
    return;
  }
  window.BertvizViews.gradioHost({ element, props, server, trigger, watch });
})();
""".replace("MISSING", in_page_language(SCRIPT_MISSING))


@dataclass(frozen=True)
class Analysis:
    """What a host's key stands for: the session it was made for, the model, and the Run while the explorer's cache
    keeps it (a weak reference: the registry never keeps a Run alive)."""

    session: str | None
    model: str
    run: weakref.ref


class ViewsHost:
    """The registry and server functions behind every views host of one page."""

    def __init__(self, models: Models, lane: "ExportLane | None" = None):
        self.models = models
        self.lane = lane or ExportLane()
        self._secret = secrets.token_bytes(32)  # per process: keys cannot be made, or recognized, from a text
        self._analyses: OrderedDict[str, Analysis] = OrderedDict()
        self._lock = threading.Lock()
        self.timelines = TimelinePages()

    def key(self, session: str | None, model: str, run: Run) -> str:
        text = json.dumps([session, model, run.encoding.text, run.encoding.text_pair], ensure_ascii=False)
        return hmac.new(self._secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]

    def value(self, model: str, run: Run) -> dict:
        """A host's value for `run`: its payload (base64) and what a permalink needs; its key is the visitor's
        session's alone (the session of the event that calls this)."""
        session = gradio_internals.current_session_hash()
        key = self.key(session, model, run)
        with self._lock:
            self._analyses[key] = Analysis(session, model, weakref.ref(run))
            self._analyses.move_to_end(key)
            while len(self._analyses) > 4096:
                self._analyses.popitem(last=False)
        return {"payload": base64.b64encode(run.views_payload()).decode("ascii"), "key": key,
                "a": run.encoding.text, "b": run.encoding.text_pair or "", "model": model}

    def run_for(self, key, session: str | None) -> tuple[str, Run]:
        """(model name, Run) of a value's key for the session that asks, from the cache; a sentence for the visitor
        when it is gone, or was never this session's (the same sentence: it does not tell whether the key exists)."""
        with self._lock:
            found = self._analyses.get(key) if isinstance(key, str) else None
        run = found.run() if found is not None and session is not None and found.session == session else None
        if run is None:
            raise refuse("This analysis is no longer in the server's memory; press Analyze to compute it again.")
        return found.model, run

    def component(self, elem_id: str, *, id_prefix: str = "", permalink: bool = False, sync: str = "",
                  silence: bool = False) -> gr.HTML:
        """A host: the views of whatever value it is given (see HOST_SCRIPT for the props)."""
        run_for, lane, timelines = self.run_for, self.lane, self.timelines

        # Plain functions, not methods: gradio marks each server function with an attribute. Gradio answers an
        # exception in one with a bare 500, so each answers {"value": ...} or {"error": a sentence} instead.
        # Coroutines: gradio awaits them on its event loop, and the work itself waits in the lane.
        async def query_key(key):
            return await lane.call(lambda session: base64.b64encode(
                run_for(key, session)[1].query_key_payload()).decode("ascii"))

        async def offline_page(key):
            def page(session):
                run = run_for(key, session)[1]
                return views.standalone_html(run.views_payload(), run.query_key_payload(), title=run.title)
            return await lane.call(page)

        async def attention_csv(request):
            request = request if isinstance(request, dict) else {}
            return await lane.call(lambda session: csv_of(run_for(request.get("key"), session)[1],
                                                          request.get("matrix"), request.get("layer"),
                                                          request.get("head")))

        async def timeline_page(request):
            return await timelines.lane.call(lambda session: timelines.page(request))

        return gr.HTML(value=None, html_template="<div class='bv-host'></div>",
                       js_on_load=HOST_SCRIPT, apply_default_css=False, elem_id=elem_id,
                       server_functions=[query_key, offline_page, attention_csv, timeline_page], id_prefix=id_prefix,
                       permalink=permalink, sync=sync, silence=silence)


class TimelinePages:
    """A training timeline's snapshots for the views, a page at a time. A host's value (`value`) carries every
    snapshot's loss, roles and predictions, and the payloads of the page that holds the snapshot it opens on; the
    host asks for another page (`page`, the `timeline_page` server function) when the slider reaches a snapshot it
    does not have, and moving within what it has asks for nothing. A page holds as many snapshots as fit in
    `page_bytes` of stored payload; each is base64-encoded once and kept, least recently used first out, within
    `budget` bytes for every visitor together. One answer is at most a page: 1,000 snapshots of a 122-token input
    were one 633 MB answer before."""

    def __init__(self, page_bytes: int | None = None, budget: int | None = None, lane: "ExportLane | None" = None):
        self.page_bytes = page_bytes or limits.TIMELINE_PAGE_BYTES
        self.budget = budget or limits.TIMELINE_CACHE_BYTES
        self.lane = lane or ExportLane(limits.TIMELINE_PAGES_AT_ONCE, limits.TIMELINE_PAGES_WAITING,
                                       limits.TIMELINE_PAGES_PER_MINUTE)
        self._pages: OrderedDict[tuple, list[str]] = OrderedDict()
        self.cached_bytes = 0
        # what a value's "pages" names: (timeline, input, page size), by an opaque name the visitor cannot choose
        self._named: OrderedDict[str, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def value(self, timeline, index: int, model: str) -> dict:
        """A host's value: the timeline views' data of input `index` with the page of its last snapshot; "key"
        names the model and the input (a later value with more snapshots grows the slider in place)."""
        size = timeline.page_size(index, self.page_bytes)
        data = timeline.views_data(index)
        last = max(0, len(data["steps"]) - 1) // size
        data["page_size"] = size
        data["window"] = self._page(timeline, index, data["steps"], size, last)
        return {"timeline": data, "key": f"{model}\u0000{index}", "pages": self._name(timeline, index, size)}

    def page(self, request) -> dict:
        """{"page", "steps", "payloads"} of page `request["page"]` of the timeline `request["pages"]` names."""
        request = request if isinstance(request, dict) else {}
        with self._lock:
            found = self._named.get(request.get("pages")) if isinstance(request.get("pages"), str) else None
        if found is None:
            raise refuse("This timeline is no longer in the server's memory; open the Timeline tab again.")
        timeline, index, size = found
        steps = timeline.steps
        number = index_value(request.get("page"), max(1, -(-len(steps) // size)), "Page")
        return self._page(timeline, index, steps, size, number)

    def _name(self, timeline, index: int, size: int) -> str:
        with self._lock:
            for name, entry in self._named.items():
                if entry[0] is timeline and entry[1:] == (index, size):
                    self._named.move_to_end(name)
                    return name
            name = secrets.token_urlsafe(12)
            self._named[name] = (timeline, index, size)
            while len(self._named) > 1024:
                self._named.popitem(last=False)
            return name

    def _page(self, timeline, index: int, steps: list[int], size: int, number: int) -> dict:
        chunk = steps[number * size:(number + 1) * size]
        key = (str(timeline.folder), index, tuple(chunk))
        with self._lock:
            encoded = self._pages.get(key)
            if encoded is not None:
                self._pages.move_to_end(key)
        if encoded is None:
            try:
                encoded = [base64.b64encode(blob).decode("ascii") for blob in timeline.payloads(chunk, index)]
            except ValueError as err:  # TimelineError: a file refused; the operator's log names it, not the page
                log.warning("%s", err)
                raise refuse(f"A snapshot between steps {chunk[0]} and {chunk[-1]} of this timeline cannot be sent: "
                             "its file is not a views payload inside the timeline's folder (the server's log says "
                             "which and why).") from None
            with self._lock:
                if key not in self._pages:
                    self._pages[key] = encoded
                    self.cached_bytes += sum(map(len, encoded))
                while self.cached_bytes > self.budget and len(self._pages) > 1:
                    self.cached_bytes -= sum(map(len, self._pages.popitem(last=False)[1]))
        return {"page": number, "steps": chunk, "payloads": encoded}


class ExportLane:
    """Where the server functions' work waits: at most `at_once` calls run (in worker threads of the lane's own, not
    gradio's 40), at most `waiting` more wait (past that: "busy", in words), one session may make at most
    `per_minute` calls a minute, and one client address (which may hold up to SESSIONS_PER_ADDRESS sessions) at most
    `per_address` (None: no such count). `what` names the calls in the sentences. Each answers {"value": ...} or
    {"error": a sentence}.

    A call past its rate is answered after a pause (up to REFUSAL_PAUSE_S; "busy" after a second; at most PAUSED at
    once), which costs the server nothing: a refusal still costs ~4 ms of the one thread that answers every request (the login check,
    gradio's route), and 100 threads that asked again at once took another visitor's cached answer to seconds."""

    PAUSED = 256

    def __init__(self, at_once: int = limits.EXPORTS_AT_ONCE, waiting: int = limits.EXPORTS_WAITING,
                 per_minute: int = limits.EXPORTS_PER_MINUTE, clock=time.monotonic,
                 per_address: int | None = limits.EXPORTS_PER_ADDRESS, what: str = "exports"):
        self.at_once, self.waiting, self.per_minute, self.clock = at_once, waiting, per_minute, clock
        self.per_address, self.what = per_address, what
        self._limiter: anyio.CapacityLimiter | None = None
        self._queued = 0
        self._paused = 0
        # ("session", s) or ("address", a) -> times of its calls in the minute
        self._calls: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        times = self._calls.pop(key, deque())
        while times and now - times[0] >= 60:
            times.popleft()
        self._calls[key] = times
        while len(self._calls) > 8192:
            self._calls.popitem(last=False)
        return times

    def allow(self, session: str, address: str | None = None) -> tuple[str, float]:
        """("", 0) if `session` (from `address`) may call now (and count it), else (the sentence that says when it
        may, the seconds until then)."""
        now = self.clock()
        counts = [(self._recent(("session", session), now), self.per_minute, "This page")]
        if address is not None and self.per_address is not None:
            counts.append((self._recent(("address", address), now), self.per_address,
                           "Pages from your network address (a class behind one school address shares it)"))
        for times, most, whose in counts:
            if len(times) >= most:
                wait = times[0] + 60 - now
                return (f"{whose} asked the server for more than {most} {self.what} in a minute; try again in "
                        f"{max(1, round(wait))} s.", wait)
        for times, _, _ in counts:
            times.append(now)
        return "", 0.0

    async def call(self, work) -> dict:
        """`work(session)` in the lane for the calling session (guards.CALLER); a refusal in the language of the
        caller's page."""
        answer = await self._call(work)
        if "error" in answer:
            answer["error"] = tr_of(guards.CALLER.get()).message(answer["error"])
        return answer

    async def _call(self, work) -> dict:
        caller = guards.CALLER.get()
        session = caller.session if caller else None
        if session is None:
            return {"error": "This view's server functions answer only through bertviz_app.app.serve, which knows "
                             "whose page asks; serve the app with it (or the bertviz-app command)."}
        refused, wait = self.allow(session, caller.address)
        if not refused and self._queued >= self.at_once + self.waiting:
            refused, wait = f"The server is busy with other visitors' {self.what}; try again in a moment.", 1.0
        if refused:
            if self._paused < self.PAUSED:
                self._paused += 1
                try:
                    await anyio.sleep(min(wait, limits.REFUSAL_PAUSE_S))
                finally:
                    self._paused -= 1
            return {"error": refused}
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.at_once)
        self._queued += 1
        try:
            return await anyio.to_thread.run_sync(in_words(work), session, limiter=self._limiter)
        finally:
            self._queued -= 1


def in_words(fn):
    """A server function's answer: {"value": what fn returns}, or {"error": the sentence user_errors would show}."""
    checked = user_errors(fn)

    @functools.wraps(fn)
    def answer(*args):
        try:
            return {"value": checked(*args)}
        except gr.Error as err:
            return {"error": err.message}

    return answer


def csv_of(run: Run, matrix, layer, head) -> str:
    """The exact numbers behind the matrix on screen, one row per (layer, head, from, to): one head, all heads of a
    layer, the layer's rollout, or value-weighted attention (its norms, before the views scale rows to one); the
    `precision` column says whether the server keeps attention in float32 or float16 (`--cache-dtype`)."""
    if not isinstance(matrix, str) or matrix not in MATRICES:  # the browser's raw JSON: any type can come
        raise refuse(f"Unknown matrix {str(matrix)[:40]!r}; choose one of: {', '.join(MATRICES)}.")
    layer = index_value(layer, run.num_layers, "Layer")
    heads = list(range(run.num_heads)) if head == "all" or matrix == "rollout" else [
        index_value(head, run.num_heads, "Head")]
    if matrix != "rollout" and len(heads) * len(run) ** 2 > MAX_CSV_ROWS:
        raise refuse(f"All {len(heads)} heads of this {len(run)}-token input are {len(heads) * len(run) ** 2:,} "
                     f"rows, more than the {MAX_CSV_ROWS:,} a CSV from this server carries; choose one head.")
    # written a matrix row at a time (no table of every row), float32 with every digit it needs, float16 with its own
    return run.attention_csv(None, [layer], heads, matrix)
