"""What every tab shares: the loaded models, the visitor's session, checks of values at the boundary (the API
accepts anything JSON can carry), and turning errors into sentences. No layout here."""

from __future__ import annotations

import functools
import html
import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from .. import i18n, limits
from ..explorer import Explorer
from ..inputs import LONE_SURROGATE, MAX_CHARS, has_lone_surrogate, text_problem
from ..run import Run
from .server import gradio_internals

log = logging.getLogger("bertviz_app.app")

PAGE_FILES = Path(__file__).resolve().parent / "page"


@functools.cache
def page_file(name: str) -> str:
    """A script or a piece of HTML of the page, from app/page/ (read once): the page's code lives in files, which
    node's tests read as they are, and Python only names them."""
    return (PAGE_FILES / name).read_text(encoding="utf-8")


def language_of(request) -> str:
    """The visitor's language, as the page chose it (views/js/i18n.mjs): ?lang= in the page's address (the request's
    own query, or the page's address the browser names as Referer), else the browser's Accept-Language."""
    return i18n.language_of_headers(getattr(request, "headers", None) or {},
                                    (getattr(request, "query_params", None) or {}).get("lang"))


def say(request, english: str, **values) -> str:
    """`english` in the visitor's language (`language_of`), its {name} placeholders filled: for what a handler
    writes (labels built once are translated in the page by gradio: server/gradio_internals.translate_static_text)."""
    return i18n.translate(english, language_of(request), **values)


def tr_of(request) -> i18n.Translator:
    """The visitor's translator (`say` without the request each time), for a handler that writes many strings and
    for the figure builders, which take one."""
    return i18n.translator(language_of(request))


def in_page_language(english: str) -> str:
    """A JavaScript expression: `english` in the page's language (`?lang=`, else the browser's), for a script that runs
    where the views' script, and with it their translations (views/js/i18n.mjs), is missing."""
    said = json.dumps({lang: i18n.translate(english, lang) for lang in i18n.LANGUAGES}, ensure_ascii=False)
    return ("((said) => said[[new URLSearchParams(location.search).get('lang'), ...navigator.languages]"
            ".map((l) => String(l || '').slice(0, 2).toLowerCase()).find((l) => l in said)] ?? said.en)"
            f"({said})")


MAX_CHOICE_CHARS = 500  # a dropdown's value: a model name, a token, a word to explain


def user_errors(fn: Callable) -> Callable:
    """Every failure reaches the visitor as a sentence in a gr.Error, in their language, never as a traceback.
    ValueError and TypeError are the library's way of saying "this input cannot work" and are shown as they are
    (`i18n.translate_message` finds a catalogued one by its template); a gr.Error a tab raised in English is
    translated the same way; anything else is our bug: logged with its traceback on the server, shown as a short
    apology."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error as err:
            err.message = i18n.translate_message(str(err.message), language_of(_request_in(args, kwargs)))
            raise
        except (ValueError, TypeError, KeyError, IndexError) as err:
            message = i18n.translate_message(str(err).strip("'\""), language_of(_request_in(args, kwargs)))
            message = message or type(err).__name__
            raise gr.Error(message[:1].upper() + message[1:], print_exception=False) from None
        except Exception:
            log.exception("%s failed", fn.__name__)
            raise gr.Error(say(_request_in(args, kwargs), "Something went wrong on the server while drawing this "
                               "view; the details are in the server's log. Try another input."),
                           print_exception=False) from None

    return wrapper


def _request_in(args, kwargs):
    """The request of the event a handler answers: its own `request` argument, else the one gradio is answering."""
    found = kwargs.get("request") or next((a for a in args if isinstance(a, gr.Request)), None)
    return found if found is not None else gradio_internals.current_request()


def refuse(message: str) -> gr.Error:
    """A gr.Error for the visitor, without a traceback in the server's log (the visitor's input, not our bug)."""
    return gr.Error(message, print_exception=False)


def text_value(value, what: str) -> str:
    """A text box's value, checked at the boundary by the explorer's own check (inputs.text_problem), in the same
    words."""
    problem = text_problem(value)
    if problem:
        raise refuse(f"{what} {problem}")
    return value or ""


def index_value(value, upper: int, what: str) -> int:
    """A slider or dropdown value as an index in [0, upper), clipped: a model switch can shrink the range."""
    try:
        index = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf), from 1e400 in the JSON
        raise refuse(f"{what} must be a whole number.") from None
    return min(max(index, 0), upper - 1)


# --- every value an event receives, checked before gradio's own processing (server.py installs this) -------------
def _kind(value) -> str:
    """What a JSON value is, in words (never the value itself: it may be huge or unprintable)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _any_lone_surrogate(value, depth: int = 0) -> bool:
    if isinstance(value, str):
        return has_lone_surrogate(value)
    if depth < 4 and isinstance(value, dict):
        return any(_any_lone_surrogate(k, depth + 1) or _any_lone_surrogate(v, depth + 1) for k, v in value.items())
    if depth < 4 and isinstance(value, (list, tuple)):
        return any(_any_lone_surrogate(v, depth + 1) for v in value)
    return False


def field_name(component) -> str:
    label = getattr(component, "label", None)
    # a label marked for gradio's translation (gradio_internals.translate_static_text) is named by its English text
    return getattr(label, "key", label) or type(component).__name__


def input_problem(component, value) -> str | None:
    """What is wrong with `value` as the value of `component`, as the end of a sentence that starts with the field's
    name; None when gradio can take it from here. Only the kinds of component this app has inputs of are known."""
    if _any_lone_surrogate(value):
        return LONE_SURROGATE
    if isinstance(component, (gr.Slider, gr.Number)):
        if value is None and isinstance(component, gr.Number):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, not {_kind(value)}."
        if not math.isfinite(value):
            return f"must be a finite number, not {value}."
    elif isinstance(component, gr.Textbox):
        if value is not None and not isinstance(value, str):
            return f"must be text, not {_kind(value)}."
    elif isinstance(component, gr.Checkbox):
        if value is not None and not isinstance(value, bool):
            return f"must be true or false, not {_kind(value)}."
    elif isinstance(component, (gr.Dropdown, gr.Radio)):
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be one of its choices, not {value}."
        if isinstance(value, list) and getattr(component, "multiselect", False):
            return None
        if value is not None and not isinstance(value, (str, int, float)):
            return f"must be one of its choices, not {_kind(value)}."
        if isinstance(value, str) and len(value) > MAX_CHOICE_CHARS:
            return f"must be one of its choices, not {len(value):,} characters of text."
        # Gradio's own check says the same, but echoes the value (any size) and logs a traceback with it. The page's
        # choices are the session's too: only dropdowns that take custom values get new choices from a handler.
        if value is not None and not getattr(component, "allow_custom_value", True):
            choices = [c[1] if isinstance(c, (tuple, list)) else c for c in getattr(component, "choices", None) or []]
            if value not in choices:
                shown = ", ".join(str(c) for c in choices[:10])
                return f"must be one of its choices ({shown}{', ...' if len(choices) > 10 else ''})."
    elif isinstance(component, gr.Dataframe):
        if value is not None and not isinstance(value, dict):
            return f"must be a table (an object with headers and data), not {_kind(value)}."
    return None


def check_inputs(components: list, values: list, gone: Mapping[str, str] | None = None) -> None:
    """Refuse, in words that name the field, values an event cannot take: missing ones, wrong types, infinite
    numbers, text with unpaired surrogates. Runs before gradio's own processing of the values, which would otherwise
    answer with no words at all ("Error: None") or, for a surrogate it echoes, break the event stream. `gone`: the
    names of models no longer offered (Models.gone), each answered with its own sentence."""
    fields = [c for c in components if not getattr(c, "stateful", False)]
    if len(values) < len(components):
        missing = [field_name(c) for c in components[len(values):] if not getattr(c, "stateful", False)]
        raise refuse(f"Missing value{'s' if len(missing) != 1 else ''}: {', '.join(missing) or 'session'}. This "
                     f"endpoint takes {len(fields)}: {', '.join(field_name(c) for c in fields)}.")
    for component, value in zip(components, values):
        if getattr(component, "stateful", False):
            continue
        problem = input_problem(component, value)
        if problem and gone and isinstance(value, str) and value in gone:
            raise refuse(gone[value])
        if problem:
            raise refuse(f"{field_name(component)} {problem}")


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
    forward_passes: int = 1  # the served --concurrency: passes at once for each model, added ones too
    names: list[str] = field(init=False)
    gone: dict[str, str] = field(default_factory=dict)  # replaced models: name -> what a page that picks it is told

    def __post_init__(self):
        self.explorers = dict(self.explorers)
        if not self.explorers:
            raise ValueError("the app needs at least one model")
        self.names = list(self.explorers)
        for explorer in self.explorers.values():
            explorer.forward_passes = self.forward_passes

    def add(self, name: str, explorer: Explorer) -> None:
        """A model made while the app runs (the Fine-tune tab's), offered from now on."""
        explorer.forward_passes = self.forward_passes
        # new containers, never changed in place: other sessions' threads may be iterating the old ones
        self.explorers = {**self.explorers, name: explorer}
        if name not in self.names:
            self.names = [*self.names, name]

    def replace(self, old: str, name: str, explorer: Explorer, why: str) -> None:
        """A model made while the app runs takes the place of `old` (the Fine-tune tab keeps so many); a page that
        still picks `old` is told `why`."""
        explorer.forward_passes = self.forward_passes
        self.explorers = {**{n: e for n, e in self.explorers.items() if n != old}, name: explorer}
        self.names = [*(n for n in self.names if n != old), name]
        self.gone = {**self.gone, old: why}

    @property
    def first(self) -> Explorer:
        return self.explorers[self.names[0]]

    def get(self, name) -> Explorer:
        if isinstance(name, str) and name not in self.explorers and name in self.gone:
            raise refuse(self.gone[name])
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
        """Keyword arguments of every event but analyze whose handler can run a forward pass: they share one queue
        lane, --concurrency of them at once. Analyze has a lane of its own (`analysis_api`) whose passes the explorer
        bounds to --concurrency too, so at most twice --concurrency passes run at once. (A handler that reads the
        visitor's Run can run one: an evicted Run comes back from one.)"""
        return dict(concurrency_id="model", concurrency_limit=self.concurrency)

    def api(self, name: str, public: bool = True) -> dict:
        """`api(name, public)` for an event in the model lane: every event of a tab that reads the visitor's Run
        or runs a model is declared with this, so none can miss the lane."""
        return {**api(name, public), **self.model_events}

    def analysis_api(self, name: str, public: bool = True) -> dict:
        """`api(name, public)` for the analyze event, in a lane of its own: ANALYSES_AT_ONCE analyses under way,
        whose forward passes the explorer batches, `concurrency` passes at once (Explorer.forward_passes)."""
        return {**api(name, public), "concurrency_id": "analysis", "concurrency_limit": limits.ANALYSES_AT_ONCE}


def figure_reading(elem_id: str, reading: str, how: str) -> gr.Markdown:
    """A figure's one plain sentence, with how it is computed folded under it (the formula a student may skip)."""
    text = i18n.composed("{reading}\n<details><summary>{summary}</summary>{how}</details>", reading=reading,
                         summary="How is this computed?", how=how)  # translated whole by gradio (i18n.page_catalogue)
    return gr.Markdown(text, elem_id=elem_id, elem_classes=["bv-reading"])


def api(name: str, public: bool = True) -> dict:
    """Keyword arguments naming an event's endpoint. Every event goes through here: gradio names an unnamed event
    after its function, so a private use registered first would take the public name (and push the public endpoint
    to `name_1`); private ones get a `_` prefix instead."""
    return dict(api_name=name) if public else dict(api_name=f"_{name}", api_visibility="private")
