"""The shipped lessons (assets/lessons/*.json) and the facts their captions rely on.

A lesson step is what a permalink holds (a, b, model, layer, head, token, tab) plus a caption, as views/js/lesson.mjs
reads it; a shipped step also carries `facts`: small machine-readable claims that its caption makes about the model,
checked against the model by `check_lesson` (and by tests/test_lessons.py against the shipped one). When the default
model changes, a fact that no longer holds names its lesson and step, so the caption is rewritten rather than left
to say something untrue.

Facts, each a dict with `kind`:
- tokens: the step's input tokenizes to `tokens`.
- role: head (`layer`, `head`) has the role `role` on the step's input (analysis.head_statistics' names).
- head: the head's `statistic` (entropy, distance, cls, sep, self, previous, next) on the step's input is at least
  `min` and/or at most `max`.
- strongest: in head (`layer`, `head`), token `token` of the step's input gives its largest weight to token `to`.
- top1 / in_top: fill-mask on `text` answers `word` first / within the first `k`.
- probability: fill-mask on `text` gives `word` a probability of at least `min` and/or at most `max`.
- lens_first: the logit lens on `text` first has `word` on top at layer `layer` (0: the embeddings).
- next_sentence: P(IsNext) of (`a`, `b`) is at least `min` and/or at most `max`.

A step may also ask first (views/js/lesson.mjs reads it): `question` {ask, choices (2 to 5 tokens), answer}, which
token the step's token gives the most attention in the step's layer and head. The players mark the token measured
in the numbers on screen, never the file's `answer`; `check_lesson` checks that the answer is that token on the
model, ahead of every other token by QUESTION_MARGIN, so that the browsers' 8-bit weights cannot pick another.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .catalog import ASSETS

LESSONS = ASSETS / "lessons"
QUESTION_MARGIN = 0.02  # ~5 steps of a head's 8-bit code (its row's largest weight / 255 each)
FACT_KINDS = ("tokens", "role", "head", "strongest", "top1", "in_top", "probability", "lens_first", "next_sentence")


def shipped_lessons(folder: Path = LESSONS) -> dict[str, dict]:
    """Every shipped lesson by its name (the file name without .json), in name order."""
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def for_browsers(lesson: dict) -> dict:
    """What a player needs of `lesson`: the steps without their facts (the facts are for check_lesson)."""
    return {**lesson, "steps": [{k: v for k, v in step.items() if k != "facts"} for step in lesson["steps"]]}


def lesson_card(name: str, lesson: dict) -> dict:
    """A lesson's line in a Lesson panel's list: its name (for links), title, level and minutes."""
    card = {"name": name, "title": lesson.get("title") or name, "level": lesson.get("level", ""),
            "minutes": lesson.get("minutes"), "steps": len(lesson["steps"])}
    titles = {lang: {"title": t["title"]} for lang, t in (lesson.get("translations") or {}).items()
              if isinstance(t, dict) and isinstance(t.get("title"), str)}
    return {**card, "translations": titles} if titles else card


def script_element(folder: Path = LESSONS) -> str:
    """The shipped lessons for the app's page <head>: `window.bertvizLessons` (name -> lesson, as the static page's
    lessons/NAME.js files set it) and `window.bertvizLessonCards` (lesson_card's, in name order)."""
    lessons = shipped_lessons(folder)
    value = {name: for_browsers(lesson) for name, lesson in lessons.items()}
    cards = [lesson_card(name, lesson) for name, lesson in lessons.items()]
    return (f"<script>window.bertvizLessons = {_js_literal(value)};\n"
            f"window.bertvizLessonCards = {_js_literal(cards)};</script>")


def _js_literal(value) -> str:
    # JSON is a JavaScript literal; with "<" escaped, no "</script" or "<!--" can end or confuse the element
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def check_lesson(lesson: dict, explorer, name: str = "lesson") -> list[str]:
    """The facts of `lesson` that do not hold for `explorer`'s model, each one sentence naming its step."""
    problems = []
    for n, step in enumerate(lesson["steps"], 1):
        found = [_check(fact, step, explorer) for fact in step.get("facts", [])]
        if step.get("question") is not None:
            found.append(_check_question(step["question"], step, explorer))
        problems += [f"{name}, step {n}: {problem}" for problem in found if problem]
    return problems


def _check_question(question: dict, step: dict, explorer) -> str | None:
    choices, answer = question.get("choices") or [], question.get("answer")
    if not 2 <= len(choices) <= 5 or len(set(choices)) != len(choices) or answer not in choices:
        return f"the question's answer {answer!r} is not one of 2 to 5 different choices ({choices})"
    if any(not isinstance(step.get(key), int) for key in ("layer", "head", "token")):
        return "the question asks about the step's token, but the step has no layer, head and token"
    run = explorer.run(step["a"], step.get("b") or None)
    tokens = list(run.token_table()["token"])
    row = np.asarray(run.attention(layer=step["layer"], head=step["head"]))[step["token"]]
    best = tokens[int(row.argmax())]
    if best != answer:
        return (f"the question's answer is {answer!r}, but {tokens[step['token']]!r} gives the most attention to "
                f"{best!r}")
    margin = float(row.max() - max(w for t, w in zip(tokens, row) if t != best))
    if margin < QUESTION_MARGIN:
        return (f"the question's answer {answer!r} leads the next token by {margin:.3f}, under {QUESTION_MARGIN}: a "
                "browser's 8-bit weights might mark another")
    return None


def _check(fact: dict, step: dict, explorer) -> str | None:
    kind = fact.get("kind")
    if kind not in FACT_KINDS:
        return f"unknown fact kind {kind!r} (one of {', '.join(FACT_KINDS)})"
    if kind in ("tokens", "role", "head", "strongest"):
        run = explorer.run(step["a"], step.get("b") or None)
        if kind == "tokens":
            tokens = list(run.token_table()["token"])
            return None if tokens == fact["tokens"] else f"the input tokenizes to {tokens}, not {fact['tokens']}"
        layer, head = fact["layer"], fact["head"]
        if kind == "role":
            role = str(run.head_statistics().dominant[layer, head])
            return None if role == fact["role"] else f"head {layer}-{head} is '{role}', not '{fact['role']}'"
        if kind == "head":
            value = float(getattr(run.head_statistics(), fact["statistic"])[layer, head])
            return _within(f"head {layer}-{head}'s {fact['statistic']}", value, fact)
        row = np.asarray(run.attention(layer=layer, head=head))[fact["token"]]
        best = int(row.argmax())
        return None if best == fact["to"] else (f"in head {layer}-{head} token {fact['token']} looks most at token "
                                                f"{best}, not {fact['to']}")
    if kind == "next_sentence":
        return _within(f"P(IsNext) of {fact['a']!r} / {fact['b']!r}", explorer.next_sentence(fact["a"], fact["b"]),
                       fact)
    if kind == "lens_first":
        lens = explorer.logit_lens(fact["text"])
        first = next((k for k, layer in enumerate(lens.layers) if layer[0][0] == fact["word"]), None)
        return None if first == fact["layer"] else (f"the logit lens on {fact['text']!r} first has {fact['word']!r} "
                                                    f"on top at layer {first}, not {fact['layer']}")
    top = explorer.fill_mask(fact["text"], top_k=max(5, fact.get("k", 1)))[0]
    words = [word for word, _ in top]
    if kind == "top1":
        return None if words[0] == fact["word"] else f"{fact['text']!r} answers {words[0]!r} first, not {fact['word']!r}"
    if kind == "in_top":
        return None if fact["word"] in words[:fact["k"]] else (f"{fact['word']!r} is not in the first {fact['k']} "
                                                               f"answers to {fact['text']!r} ({words[:fact['k']]})")
    # the whole vocabulary's probabilities, so that a word far down the list is found too
    probability = dict(explorer.fill_mask(fact["text"], top_k=explorer.tokenizer.vocab_size)[0]).get(fact["word"], 0.0)
    return _within(f"P({fact['word']!r}) in {fact['text']!r}", probability, fact)


def _within(what: str, value: float, fact: dict) -> str | None:
    low, high = fact.get("min"), fact.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = " and ".join(s for s in (low is not None and f"at least {low}", high is not None and f"at most {high}")
                              if s)
        return f"{what} is {value:.3f}, not {bounds}"
    return None
