"""What every tab shares: the loaded models, the visitor's session, checks of values at the boundary (the API
accepts anything JSON can carry), and turning errors into sentences. No layout here."""

from __future__ import annotations

import functools
import html
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import gradio as gr

from ..explorer import Explorer
from ..run import Run

log = logging.getLogger("bertviz_app.app")

MAX_CHARS = 20_000  # per box; the tokenizer is fast, but a pasted book should not reach it


def user_errors(fn: Callable) -> Callable:
    """Every failure reaches the visitor as a sentence in a gr.Error, never as a traceback. ValueError and TypeError
    are the library's way of saying "this input cannot work" and are shown as they are; anything else is our bug:
    logged with its traceback on the server, shown as a short apology."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except (ValueError, TypeError, KeyError, IndexError) as err:
            message = str(err).strip("'\"") or type(err).__name__
            raise gr.Error(message[:1].upper() + message[1:], print_exception=False) from None
        except Exception:
            log.exception("%s failed", fn.__name__)
            raise gr.Error("Something went wrong on the server while drawing this view; the details are in the "
                           "server's log. Try another input.", print_exception=False) from None

    return wrapper


def refuse(message: str) -> gr.Error:
    """A gr.Error for the visitor, without a traceback in the server's log (the visitor's input, not our bug)."""
    return gr.Error(message, print_exception=False)


def text_value(value, what: str) -> str:
    """A text box's value, checked at the boundary."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise refuse(f"{what} must be text.")
    if len(value) > MAX_CHARS:
        raise refuse(f"{what} has {len(value):,} characters; paste at most {MAX_CHARS:,} (the model reads only the "
                     "first few hundred tokens anyway).")
    return value


def index_value(value, upper: int, what: str) -> int:
    """A slider or dropdown value as an index in [0, upper), clipped: a model switch can shrink the range."""
    try:
        index = int(value)
    except (TypeError, ValueError):
        raise refuse(f"{what} must be a whole number.") from None
    return min(max(index, 0), upper - 1)


def significant(p: float) -> float:
    # four significant digits: an untrained model's 0.00003 must not read as 0
    return float(f"{float(p):.4g}")


def percent(p: float) -> str:
    return f"{float(p) * 100:.3g}%"


def plain(token: str) -> str:
    """A token inside Markdown, shown as the characters it is (a token may be '*', '<' or '`')."""
    escaped = html.escape(token, quote=False)
    return escaped.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "\\`")


@dataclass
class Models:
    """The models the operator named, by the name the picker shows. Only these can be picked, by the page or the
    API: a name is looked up, never opened as a path."""

    explorers: Mapping[str, Explorer]
    names: list[str] = field(init=False)

    def __post_init__(self):
        self.explorers = dict(self.explorers)
        if not self.explorers:
            raise ValueError("the app needs at least one model")
        self.names = list(self.explorers)

    @property
    def first(self) -> Explorer:
        return self.explorers[self.names[0]]

    def get(self, name) -> Explorer:
        if not isinstance(name, str) or name not in self.explorers:
            raise refuse(f"Unknown model {str(name)[:80]!r}; choose one of: {', '.join(self.names)}.")
        return self.explorers[name]

    def run_of(self, session) -> tuple[Explorer, Run]:
        """The explorer and Run of the visitor's current analysis (the session holds its key, not the arrays: the
        Run stays in the explorer's cache, and comes back from one forward pass if it was evicted)."""
        if not isinstance(session, dict):
            raise refuse("Nothing analyzed yet: type a sentence and press Analyze.")
        explorer = self.get(session["model"])
        return explorer, explorer.run(session["text"], session["pair"] or None)


@dataclass
class Page:
    """What the tabs of one page share: the models, the visitor's session (the key of their current Run, in a
    gr.State), the model picker, and the event settings of handlers that run a model."""

    models: Models
    session: gr.State
    model: gr.Dropdown
    concurrency: int = 1

    @property
    def model_events(self) -> dict:
        """Keyword arguments of every event whose handler runs a forward pass: they share one queue lane."""
        return dict(concurrency_id="model", concurrency_limit=self.concurrency)


def api(name: str, public: bool = True) -> dict:
    """Keyword arguments naming an event's endpoint. Every event goes through here: gradio names an unnamed event
    after its function, so a private use registered first would take the public name (and push the public endpoint
    to `name_1`); private ones get a `_` prefix instead."""
    return dict(api_name=name) if public else dict(api_name=f"_{name}", api_visibility="private")
