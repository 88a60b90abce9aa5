"""What the Fine-tune and Pretrain tabs share, as services each tab holds (neither tab inherits the other):
`TrainedModels` offers a model a tab trained in every model list of the page, the oldest it trained out past its
bound; `PollPace` answers a page's progress polls no faster than its own timer asks."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from ... import limits
from ...explorer import release_freed_memory
from ...i18n import Translator, english
from ..common import Models, plain

log = logging.getLogger("bertviz_app.app")

MAX_TRAINED = 4  # models a tab trained that the server holds (each its weights in memory, ~90 MB for the default)
POLL_S = 1.0
# A page's own timer asks every POLL_S; a call sooner than this after the page's last answered one gets nothing new.
MIN_POLL_S = POLL_S / 2


class TrainedModels:
    """The models one tab trained that the page still offers, oldest first (name -> folder). `most()`: how many the
    server keeps (read at each offer); `template`: a new model's name from what it was trained on and the time."""

    def __init__(self, models: Models, template: str, most: Callable[[], int] = lambda: MAX_TRAINED,
                 earlier: dict[str, Path] | None = None):
        self.models, self.template, self.most = models, template, most
        self.folders: dict[str, Path] = dict(earlier or {})
        self.replaced = 0  # models replaced so far: with the list's length, what a page's lists are up to date with
        self.pickers: list = []  # the page's model lists, whose server copy follows each offer

    def new_name(self, label: str) -> str:
        stem = self.template.format(label, time.strftime('%H:%M'))
        name, n = stem, 1
        while name in self.models.names:
            n += 1
            name = f"{stem} ({n})"
        return name

    def offer(self, name: str, folder: Path, explorer) -> tuple[str, str | None]:
        """A trained model in every model list, the oldest trained one out past `most()`: (name, the one out)."""
        explorer.warm_up()  # here, on the training's thread, not at the first visitor's input
        most = self.most()
        oldest = next(iter(self.folders)) if len(self.folders) >= most else None
        if oldest is None:
            self.models.add(name, explorer)
        else:  # its folder stays in the cache (`--model` offers it again); its weights leave the memory
            self.models.replace(oldest, name, explorer, replaced_words(oldest, name, most))
            del self.folders[oldest]
            self.replaced += 1
            log.info("trained model %s replaced %s (the server keeps %d)", name, oldest, most)
        self.folders[name] = folder
        for picker in self.pickers:  # the server's copy: what the page may send from now on
            picker.choices = [(n, n) for n in self.models.names]
        if oldest is not None:
            release_freed_memory()
        return name, oldest


class Refusals:
    """Why each page's last quiet event was refused. Gradio shows no toast for events that run without the queue,
    only a hidden "Error", so a tab raises `refuse(request, why)` and a follow-up event (`.failure`) says `pop(...)` in
    the tab's own status line."""

    MOST = 1000  # a bound, as the sessions themselves have

    def __init__(self):
        self._why: dict[str | None, str] = {}

    def refuse(self, request, message: str) -> gr.Error:
        self._why[getattr(request, "session_hash", None)] = message
        while len(self._why) > self.MOST:
            self._why.pop(next(iter(self._why)))
        return gr.Error(message, visible=False, print_exception=False)

    def pop(self, request, default: str) -> str:
        return self._why.pop(getattr(request, "session_hash", None), default)


def not_started(why: str, tr: Translator = english) -> str:
    """The status line after a refused Start, in the page's refusal style."""
    return f"<span class='bv-stale'>**{tr('Not started.')}** {plain(why)}</span>"


def replaced_words(name: str, by: str, most: int = MAX_TRAINED) -> str:
    """What a page that still picks a replaced model is told."""
    return (f"{name} is no longer offered: the server keeps the {most} latest models fine-tuned in the app, and {by} "
            "took its place. Pick another model in the list (reload the page to see the list as it is now).")


def client_address(request) -> str | None:
    """The client address of a request (the connection's, or a trusted proxy's X-Forwarded-For), None if unknown."""
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or (client.get("host") if isinstance(client, dict) else None)


class PollPace:
    """When each page was last answered and the progress version it got. `min_s()`: the least time between two
    answers to one page (read at each call)."""

    def __init__(self, min_s: Callable[[], float] = lambda: MIN_POLL_S):
        self.min_s = min_s
        self._polls: dict[str, tuple[float, int]] = {}  # page -> (when it was last answered, the version it got)
        self._lock = threading.Lock()

    def last(self, page: str | None) -> int | None:
        """The progress version this page was last sent (-1: none), or None when it asks too soon; notes the call.
        Direct calls (no request: tests, the notebook) are always answered in full."""
        if page is None:
            return -1
        now = time.monotonic()
        with self._lock:
            last, version = self._polls.get(page, (float("-inf"), -1))
            if now - last < self.min_s():
                return None
            if len(self._polls) >= 2 * limits.MAX_SESSIONS:  # forget pages that stopped asking
                for key in [k for k, (t, _) in self._polls.items() if now - t > 60 * POLL_S]:
                    del self._polls[key]
                if len(self._polls) >= 2 * limits.MAX_SESSIONS:
                    self._polls.clear()
            self._polls[page] = (now, version)
            return version

    def sent(self, page: str | None, version: int) -> None:
        if page is not None:
            with self._lock:
                self._polls[page] = (self._polls[page][0], version)
