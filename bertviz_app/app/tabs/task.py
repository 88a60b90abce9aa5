"""The Task tab: what a fine-tuned model answers for the analyzed input (bars per label, a tag per word, the answer
marked in its context), and why: integrated gradients toward the predicted label (or one the student picks), the
heads whose silencing moves that label most (a click opens one in the attention views), one click into Compare with
the model before fine-tuning, and the held-out set as a table whose rows analyze themselves when clicked. A model
without a fine-tuned head says how to make one."""

from __future__ import annotations

import math
from pathlib import Path

import gradio as gr
import pandas as pd

from ... import files
from ...explorer import Explorer
from ...finetuning import ClassPrediction, TagPrediction
from ...i18n import Translator, english
from ...run import Run
from ..common import api, percent, plain, refuse, tr_of, user_errors
from .base import Gate, TabPage

NO_TASK = ("**{name} is not fine-tuned for a task**, so this tab has nothing to show for it: the tab shows what a "
           "fine-tuned model answers for the input (a label per sentence, a tag per word, an answer in a passage) and "
           "which words and heads that answer depends on. To see one, {todo}.")
EXPLAIN_HINT = ("Press **Explain** to see which words the answer depends on (integrated gradients) and which heads "
                "it needs (each head silenced in turn).")
STEPS = 50  # Gauss-Legendre points: the shares add up to the change within ~1e-6 of it on the default model
TOP_HEADS = 8
HELDOUT_ROWS = 2000
MAIN_VIEWS = "attention-host"

# Tokens and label names reach the page through Handlebars' {{ }}, which escapes them: text, never markup.
TOKENS_TEMPLATE = ("{{#if value.tokens}}<div class='bv-task-tokens' style='font-size:1.25em;line-height:1.9'>"
                   "{{#each value.tokens}}<span style='background:{{this.color}};padding:1px 3px;border-radius:3px' "
                   "title='{{this.score}}'>{{this.token}}</span> {{/each}}</div>"
                   "<p class='bv-task-legend'><span style='background:rgba(26,152,80,.6)'>{{value.green}}</span> "
                   "{{value.raises}}, <span style='background:rgba(215,48,39,.6)'>{{value.red}}</span> "
                   "{{value.lowers}}</p>{{/if}}")
HEADS_TEMPLATE = ("{{#if value.heads}}<p>{{value.intro}}</p><ol class='bv-task-heads'>{{#each value.heads}}<li>"
                  "<button class='bv-open-head' data-layer='{{this.layer}}' data-head='{{this.head}}' "
                  "style='font:inherit;padding:1px 10px;margin:2px 0;border:1px solid #b5b5bd;border-radius:6px;"
                  "background:#f4f4f5;cursor:pointer'>{{this.name}}</button> "
                  "{{this.words}}</li>{{/each}}</ol>{{/if}}")
OPEN_HEAD_JS = f"""
element.addEventListener("click", (event) => {{
  const button = event.target.closest("button.bv-open-head");
  if (!button || !window.BertvizViews) return;
  window.BertvizViews.openHead("{MAIN_VIEWS}", Number(button.dataset.layer), Number(button.dataset.head));
}});
"""


def task_view(explorer: Explorer, run: Run, alternatives: tuple[str, ...] = (),
              can_train: bool = False, tr: Translator = english) -> tuple[str, dict | None]:
    """(Markdown, {label: probability} for gr.Label or None) for the analyzed input. A model without a fine-tuned head
    gets what to do instead: pick one of `alternatives` (the app's fine-tuned models), fine-tune one in the Fine-tune
    tab (`can_train`: the page may train), or start the app with one."""
    if explorer.task is None:
        todo = ([tr("pick **{name}** in the model list", name=plain(alternatives[0]))] if alternatives else [])
        if can_train:
            todo.append(tr("fine-tune one in the **Fine-tune** tab (a few minutes; it then joins the model list)"))
        else:
            todo.append(tr("start the app with `--model` naming a folder made by `bertviz-app finetune` (its `--help` "
                           "says how)"))
        return tr(NO_TASK, name=plain(explorer.name), todo=tr(" or ").join(todo)), None
    if explorer.finetuned_task.reads_pair and not run.encoding.is_pair:
        return tr("**A question and a passage are needed:** type the question as sentence A and the passage to search "
                  "as sentence B, then press Analyze."), None
    result = explorer.predict(run.encoding.text, run.encoding.text_pair)
    if isinstance(result, ClassPrediction):
        return (tr("**{label}** ({share}) according to {name}.", label=plain(result.label),
                   share=f"{result.probability:.1%}", name=plain(explorer.name)), result.probabilities)
    if isinstance(result, TagPrediction):
        rows = "\n".join(f"| {plain(w.word)} | {plain(w.tag)} | {w.probability:.1%} |" for w in result.words)
        return (tr("A tag for every word, by {name}:", name=plain(explorer.name))
                + f"\n\n| {tr('word')} | {tr('tag')} | {tr('probability')} |\n|---|---|---|\n{rows}"), None
    if not result.answer:  # an AnswerPrediction
        return tr("**No answer found** in the passage."), None
    context = run.encoding.text_pair
    marked = (plain(context[:result.start]) + "**" + plain(result.answer) + "**" + plain(context[result.end:]))
    return (tr("**Answer: {answer}** (first token {first}, last token {last})", answer=plain(result.answer),
               first=f"{result.start_probability:.1%}", last=f"{result.end_probability:.1%}")
            + f"\n\n> {marked}"), None


# ------------------------------------------------------------------------------------------------------------------
# Why: integrated gradients and the heads it needs
# ------------------------------------------------------------------------------------------------------------------
def word_choices(explorer: Explorer, run: Run, tr: Translator = english) -> list[tuple[str, int]]:
    """A tagger's words as (label, token position) choices: each word's first piece."""
    if explorer.task is None or not explorer.finetuned_task.per_word:
        return []
    words = run.encoding.word_ids
    return [(tr("{token} (token {n})", token=run.labels[i], n=i), i) for i, s in enumerate(run.encoding.sequence_ids)
            if s is not None and (i == 0 or words[i] != words[i - 1])]


def explain_view(explorer: Explorer, run: Run, label: str | None = None, position: int | None = None,
                 steps: int = STEPS, tr: Translator = english) -> tuple[str, dict, dict]:
    """(Markdown, the tokens' attribution for TOKENS_TEMPLATE, the ranked heads for HEADS_TEMPLATE) of the analyzed
    input toward `label` (default: the predicted one)."""
    if explorer.task is None:
        raise refuse(tr("{name} has no fine-tuned head to explain; pick a fine-tuned model.", name=explorer.name))
    target = explorer.task_target(run.encoding, label=label or None, position=position)
    ig = explorer.attribute(run.encoding, target=target, steps=steps)
    ranking = explorer.rank_heads(run.encoding, target=target)
    what = _probability_name(target, tr)
    order = [i for i in sorted(range(len(ig.tokens)), key=lambda i: -abs(ig.scores[i])) if not ig.fixed[i]][:3]
    named = ", ".join(f"{plain(ig.tokens[i])} ({ig.scores[i]:+.3f})" for i in order)
    message = tr("**Integrated gradients toward {what}** ({share} for this input, {blank} for a blank one, every word "
                 "replaced by {baseline}): the change of log {what}, {change}, shared out over the tokens in {steps} "
                 "steps; the shares add up to it within {delta} of it (completeness). Largest: {largest}.",
                 what=plain(what), share=percent(target.probability(ig.f_input)),
                 blank=percent(target.probability(ig.f_baseline)), baseline=f"[{ig.baseline.upper()}]",
                 change=f"{ig.f_input - ig.f_baseline:+.3f}", steps=ig.steps, delta=f"{ig.relative_delta:.1e}",
                 largest=named or tr("none"))
    return message, tokens_value(ig.tokens, ig.scores, ig.fixed, what, tr), heads_value(ranking, what, tr=tr)


def _probability_name(target, tr: Translator = english) -> str:
    if target.kind == "answer":
        return tr("P(answer = tokens {first} to {last})", first=target.position, last=target.end)
    if target.kind == "tag":
        return tr("P({tag} at token {n})", tag=target.token, n=target.position)
    return f"P({target.token})"


def tokens_value(tokens: list[str], scores, fixed, what: str, tr: Translator = english) -> dict:
    """Each token with a color by the sign of its score (green raises, red lowers), its depth by |score| against
    the largest; [CLS] and [SEP], kept in the baseline, uncolored."""
    top = max((abs(float(s)) for s, f in zip(scores, fixed) if not f), default=0.0) or 1.0
    out = []
    for token, score, kept in zip(tokens, scores, fixed):
        depth = 0.0 if kept else 0.75 * abs(float(score)) / top
        rgb = "26,152,80" if score >= 0 else "215,48,39"
        out.append({"token": token, "score": f"{float(score):+.4f}", "color": f"rgba({rgb},{depth:.2f})"})
    return {"tokens": out, "what": what, "green": tr("green"), "raises": tr("raises {what},", what=what),
            "red": tr("red"), "lowers": tr("lowers it; the deeper, the more.")}


def heads_value(ranking, what: str, top: int = TOP_HEADS, tr: Translator = english) -> dict:
    """The `top` heads whose silencing moves the target's probability most (not its log: from 50% to 90% moves it
    more than to 20%), in words that follow the sign."""
    before = ranking.target.probability(ranking.f_input)
    frame = ranking.ranking()
    frame["moved"] = (frame["probability_after"] - before).abs()
    heads = []
    for row in frame.sort_values("moved", ascending=False, kind="mergesort").head(top).itertuples():
        after = float(row.probability_after)
        values = dict(what=what, before=percent(before), after=percent(after),
                      points=f"{(after - before) * 100:+.2f}")
        words = (tr("silencing it raises {what} from {before} to {after} ({points} points)", **values)
                 if row.effect > 0 else
                 tr("silencing it lowers {what} from {before} to {after} ({points} points)", **values)
                 if row.effect < 0 else
                 tr("silencing it leaves {what} at {before} ({points} points)", what=what, before=percent(before),
                    points=values["points"]))
        heads.append({"layer": int(row.layer), "head": int(row.head), "words": words,
                      "name": tr("layer {n}, head {head}", n=int(row.layer), head=int(row.head))})
    intro = tr("Each head silenced alone, the {n} that move {what} most: a head whose silencing lowers it supports it, "
               "one whose silencing raises it works against it. Click one to open it in the attention views above.",
               n=len(heads), what=what)
    return {"heads": heads, "intro": intro}


# ------------------------------------------------------------------------------------------------------------------
# The model before fine-tuning, and the held-out set
# ------------------------------------------------------------------------------------------------------------------
def base_name(explorer: Explorer, names: dict[str, Explorer], tr: Translator = english) -> tuple[str | None, str]:
    """(the name of the model before fine-tuning among the app's models, or None; a sentence when it is missing)."""
    base = explorer.base_model
    if explorer.task is None:
        return None, tr("{name} is not fine-tuned, so there is no model before fine-tuning.", name=plain(explorer.name))
    if base is None:
        return None, tr("{name}'s folder does not say which model it was fine-tuned from (no metrics.json or "
                        "`_name_or_path`); start the app with that model too to compare them.",
                        name=plain(explorer.name))
    for name, other in names.items():
        if other is not explorer and (name == base or (other.folder is not None and other.folder.resolve() ==
                                                       Path(base).expanduser().resolve())):
            return name, ""
    return None, tr("The model before fine-tuning, **{name}**, is not loaded in this app (it could not be found or "
                    "read); start the app with `--model` naming it too.", name=plain(Path(base).name or base))


def heldout_frame(explorer: Explorer | None) -> pd.DataFrame:
    """The held-out predictions as a table, the highest loss first (where the model is most wrong); an empty one for
    None."""
    rows = _most_wrong(explorer.heldout())[:HELDOUT_ROWS] if explorer is not None else []
    if not rows:
        return pd.DataFrame(columns=["text", "gold", "prediction", "confidence", "loss"])
    frame = pd.DataFrame({"text": [r["text"] for r in rows]})
    if any(r.get("text_pair") for r in rows):
        frame["sentence B"] = [r.get("text_pair") or "" for r in rows]
    for column in ("gold", "prediction"):
        frame[column] = [str(r.get(column, "")) for r in rows]
    for column in ("confidence", "loss"):
        frame[column] = [_number(r.get(column)) for r in rows]
    return frame.sort_values("loss", ascending=False, kind="mergesort").reset_index(drop=True)


def heldout_table(frame: pd.DataFrame) -> gr.Dataframe:
    """The table with its columns' widths, in pixels: a phone scrolls it sideways rather than squeezing each column
    to a letter's width (gradio reads a percentage as one of the screen's width)."""
    texts = 2 if "sentence B" in frame.columns else 1
    return gr.Dataframe(frame, column_widths=[f"{560 // texts}px"] * texts + ["100px", "110px", "110px", "80px"])


def _most_wrong(rows: list[dict]) -> list[dict]:
    """The rows, highest loss first (of all of them, before any cut), those without a loss last."""
    def key(row):
        loss = _number(row.get("loss"))
        return -loss if math.isfinite(loss) else math.inf
    return sorted(rows, key=key)


def _number(value) -> float:
    return round(float(value), 3) if isinstance(value, (int, float)) and math.isfinite(value) else float("nan")


def _metrics_of(explorer: Explorer) -> dict | None:
    """A fine-tuned folder's metrics.json with a held-out score, or None (none, unreadable, or not ours)."""
    if explorer.task is None or explorer.folder is None or not (explorer.folder / "metrics.json").is_file():
        return None
    try:
        metrics = files.read_json(explorer.folder / "metrics.json", ValueError)
    except ValueError:
        return None
    ok = isinstance(metrics, dict) and isinstance(metrics.get("eval"), dict) and isinstance(metrics.get("metric"), str)
    return metrics if ok and isinstance(metrics["eval"].get(metrics["metric"]), (int, float)) else None


def _spread(*metrics: dict) -> float | None:
    """The widest range (max - min) of the seeds' scores among `metrics`; None when none ran several seeds."""
    ranges = [m["seeds"]["max"] - m["seeds"]["min"] for m in metrics
              if isinstance(m.get("seeds"), dict) and len(m["seeds"].get("runs", ())) > 1]
    return max(ranges) if ranges else None


def _against(difference: float, spread: float | None, tr: Translator) -> str:
    if spread is None:
        return tr("one seed each, so no spread is known: train with --seeds (or Repeat 3 times) to know whether it is "
                  "more than chance")
    if abs(difference) <= spread:
        return tr("**within the spread of seeds** (their scores ranged over {spread})", spread=f"{spread:.3f}")
    return tr("beyond the spread of seeds (their scores ranged over {spread})", spread=f"{spread:.3f}")


def score_note(explorer: Explorer, others: dict[str, Explorer], tr: Translator = english) -> str:
    """The model's held-out score (and, trained with several seeds, their mean and spread), its difference from the
    model before training and from the app's other fine-tuned models scored on the same held-out data, each beside
    the spread of seeds: one seed is one draw, and a difference inside that spread may be chance."""
    metrics = _metrics_of(explorer)
    if metrics is None:
        return ""
    name, score = metrics["metric"], metrics["eval"][metrics["metric"]]
    words = name.replace("_", " ")
    lines = [tr("**Held-out {metric} {score}**", metric=tr(words), score=f"{score:.3f}")]
    seeds = metrics.get("seeds")
    if isinstance(seeds, dict) and len(seeds.get("runs", ())) > 1:
        lines[0] += " " + tr("(the best of {n} seeds: mean {mean} ± {std}, mean ± standard deviation; range {low} to "
                             "{high})", n=len(seeds["runs"]), mean=f"{seeds['mean']:.3f}", std=f"{seeds['std']:.3f}",
                             low=f"{seeds['min']:.3f}", high=f"{seeds['max']:.3f}")
    before = (metrics.get("eval_before_training") or {}).get(name)
    if isinstance(before, (int, float)):
        lines.append(tr("{before} before fine-tuning: {difference}, {verdict}", before=f"{before:.3f}",
                        difference=f"{score - before:+.3f}", verdict=_against(score - before, _spread(metrics), tr)))
    for other_name, other in others.items():
        theirs = _metrics_of(other) if other is not explorer else None
        if theirs is None or theirs["metric"] != name or theirs.get("data") != metrics.get("data"):
            continue  # another task, or another held-out set: not comparable
        difference = score - theirs["eval"][name]
        lines.append(tr("{name}, on the same held-out data: {theirs}, this one {difference}, {verdict}",
                        name=plain(other_name), theirs=f"{theirs['eval'][name]:.3f}", difference=f"{difference:+.3f}",
                        verdict=_against(difference, _spread(metrics, theirs), tr)))
    return lines[0] + "".join(f"\n- {line}" for line in lines[1:]) + "\n\n"


def heldout_note(explorer: Explorer, shown: int, tr: Translator = english) -> str:
    if explorer.task is None:
        return ""
    if not shown:
        return tr("{name}'s folder has no held-out predictions (heldout_predictions.jsonl).", name=plain(explorer.name))
    return tr("**The held-out set** ({n} examples the model never trained on), the most wrong first: click a row to "
              "analyze it; sort by any column from the ⋮ beside its name.", n=shown)


def picked_example(row, columns) -> tuple[str, str]:
    """(sentence A, sentence B) of a clicked held-out row (its cells in the table's column order)."""
    if not isinstance(row, (list, tuple)) or len(row) != len(columns):
        raise refuse("Click a row of the held-out table.")
    cells = dict(zip(columns, row))
    text, pair = cells.get("text"), cells.get("sentence B") or ""
    if not isinstance(text, str) or not text.strip() or not isinstance(pair, str):
        raise refuse("That row has no text to analyze.")
    return text, pair


class TaskTab:
    id, title = "task-tab", "Task"

    def __init__(self, page: TabPage):
        self.page = page
        self.message = gr.Markdown(elem_id="task")
        # Everything below answers only for a fine-tuned head: hidden for a model without one, whose message says
        # what to do instead (a row of controls that each answer "no head" teaches nothing).
        with gr.Column(visible=page.models.first.task is not None, elem_id="task-controls") as self.controls:
            self.label = gr.Label(label="Probability of each label", elem_id="task-label")
            with gr.Row(equal_height=True):
                # custom values allowed: the choices change with the model and the input, and explain checks them
                self.explain_label = gr.Dropdown([], value=None, label="Label to explain (empty: the predicted one)",
                                                 allow_custom_value=True, scale=3, elem_id="task-explain-label")
                self.word = gr.Dropdown([], value=None, label="Word (a tagger's)", allow_custom_value=True, scale=3,
                                        visible=False, elem_id="task-word")
                self.explain_button = gr.Button("Explain", variant="primary", scale=1, elem_id="task-explain")
                self.compare_button = gr.Button("Compare with the model before fine-tuning", scale=2,
                                                elem_id="task-compare")
            self.explanation = gr.Markdown(EXPLAIN_HINT, elem_id="task-explanation")
            self.tokens = gr.HTML(value={}, html_template=TOKENS_TEMPLATE, elem_id="task-attribution")
            self.heads = gr.HTML(value={}, html_template=HEADS_TEMPLATE, js_on_load=OPEN_HEAD_JS, elem_id="task-heads")
            self.heldout_info = gr.Markdown(elem_id="task-heldout-note")
            self.heldout = gr.Dataframe(interactive=False, max_height=420, wrap=True, elem_id="task-heldout",
                                        label="Held-out examples")
        self.heldout_of = gr.State(None)  # the model whose held-out table the page shows

    @user_errors
    def show(self, session, heldout_of, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        tr = tr_of(request)
        alternatives = tuple(name for name, e in self.page.models.explorers.items() if e.task is not None)
        message, bars = task_view(explorer, run, alternatives, self.page.training.enabled, tr)
        labels = explorer.labels if explorer.task is not None and explorer.finetuned_task.labelled else []
        predicted = max(bars, key=bars.get) if bars else (labels[0] if labels else None)
        words = word_choices(explorer, run, tr)
        table = info = gr.update()
        if heldout_of != session["model"]:
            try:
                frame = heldout_frame(explorer)
                info = score_note(explorer, self.page.models.explorers, tr) + heldout_note(explorer, len(frame), tr)
            except ValueError as err:  # a damaged file: the rest of the tab still answers
                frame = heldout_frame(None)
                info = tr("{name}'s held-out predictions could not be read: {why}", name=plain(explorer.name),
                          why=plain(tr.message(str(err))))
            table = heldout_table(frame)
        hint = tr(EXPLAIN_HINT) if explorer.task is not None else ""
        return (message, gr.update(visible=explorer.task is not None), bars,
                gr.update(choices=labels, value=predicted if not words else None),
                gr.update(choices=words, value=words[0][1] if words else None, visible=bool(words)), hint, {}, {},
                table, info, session["model"])

    @user_errors
    def explain(self, session, label, word, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        tr = tr_of(request)
        if label is not None and not isinstance(label, str):
            raise refuse(tr("Choose a label from the list."))
        position = word if isinstance(word, int) and not isinstance(word, bool) else None
        if explorer.task is not None and explorer.finetuned_task.per_word and position is None:
            raise refuse(tr("Choose the word whose tag to explain."))
        return explain_view(explorer, run, label, position, tr=tr)

    def wire(self) -> None:
        self.explain_button.click(self.explain, [self.page.session, self.explain_label, self.word],
                                  [self.explanation, self.tokens, self.heads], **self.page.api("task_explain"))
        self.link()

    def link(self) -> None:
        """The events that leave this tab: one click into Compare (the page's "compare-tab") with the model before
        fine-tuning; a held-out row into the input boxes, which the page then analyzes."""
        page = self.page
        compare = page.tabs["compare-tab"]

        @user_errors
        def before(session, request: gr.Request = None):
            explorer, _ = page.models.run_of(session)
            name, why = base_name(explorer, page.models.explorers, tr_of(request))
            if name is None:
                raise refuse(why.replace("**", ""))
            return (*compare.against(session, name, request), gr.Tabs(selected=compare.id))

        self.compare_button.click(before, [page.session], [*compare.against_outputs, page.tab_set],
                                  **page.api("task_compare"))

        def pick(heldout_of, table, event: gr.SelectData):
            text, pair = picked_example(event.row_value, list(getattr(table, "columns", [])))
            return text, pair, heldout_of if heldout_of in page.models.names else gr.update()

        page.analyze_after(self.heldout.select(pick, [self.heldout_of, self.heldout], [*page.sentences, page.model],
                                               **api("task_pick_heldout", False), queue=False))

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.show, [self.page.session, self.heldout_of],
                   [self.message, self.controls, self.label, self.explain_label, self.word, self.explanation,
                    self.tokens, self.heads, self.heldout, self.heldout_info, self.heldout_of],
                   **self.page.api("task", public))
