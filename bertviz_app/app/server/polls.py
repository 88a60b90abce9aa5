"""How often one page may ask for the Fine-tune tab's progress (and the few other events outside the queue that
launch.POLLED names), decided before gradio sees the call.

The page's timer asks once a second. A visitor calling `finetune_progress` without pause (8 threads, 37 calls/s) took
a 12-token analysis from 0.05 s to 0.54 s median: even an answer of nothing new costs gradio's handling of a call
(~7 ms). Here a session's polls beyond a small burst are answered at once with 429 and a sentence, and gradio never
sees them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .guards import API, ASGIApp, Receive, Scope, Send, answer, read_call, replay, route_path

RUN = f"{API}/run/predict"
BURST = 4  # polls at once: the timer's, the tab's opening and the page's load may meet
PER_SECOND = 2.0  # then two a second, twice what the page's timer asks
SESSIONS = 10_000  # sessions remembered; the oldest forgotten first


class PollRate:
    """A token bucket per session for the events `polls()` numbers (the progress polls), on gradio's route for
    events outside the queue."""

    def __init__(self, app: ASGIApp, polls: Callable[[], set[int]], clock: Callable[[], float] = time.monotonic):
        self.app = app
        self.polls = polls
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # session -> (tokens, when counted)
        self._lock = threading.Lock()

    def allowed(self, session: str) -> bool:
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.pop(session, (BURST, now))
            tokens = min(BURST, tokens + (now - then) * PER_SECOND)
            self._buckets[session] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
            while len(self._buckets) > SESSIONS:
                self._buckets.pop(next(iter(self._buckets)))
            return tokens >= 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) != RUN:
            await self.app(scope, receive, send)
            return
        body, call = await read_call(receive)
        if body is None:
            return
        if (isinstance(call, dict) and call.get("fn_index") in self.polls()
                and not self.allowed(str(call.get("session_hash")))):
            await answer(send, 429, {"error": "This page asked the server for this too often; wait a second and "
                                              "try again."})
            return
        await self.app(scope, replay(body, receive), send)

