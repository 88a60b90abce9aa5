"""The Task tab: what a fine-tuned model answers for the analyzed input (bars per label, a tag per word, the answer
marked in its context). A model without a fine-tuned head says how to make one."""

from __future__ import annotations

import gradio as gr

from ..explorer import Explorer
from ..finetuning import ClassPrediction, TagPrediction
from ..run import Run
from .common import Page, plain, user_errors

NO_TASK = ("**{name} is not fine-tuned for a task.** Fine-tuning teaches BERT one job (a label per sentence, a tag per "
           "word, an answer in a passage) on labelled examples. Make one with `bertviz-app finetune "
           "text-classification --train movie-reviews --output runs/sentiment`, then start the app with `--model "
           "runs/sentiment`.{other}")


def task_view(explorer: Explorer, run: Run, alternatives: tuple[str, ...] = ()) -> tuple[str, dict | None]:
    """(Markdown, {label: probability} for gr.Label or None) for the analyzed input."""
    if explorer.task is None:
        other = f" Pick **{plain(alternatives[0])}** in the model list to see a fine-tuned one." if alternatives else ""
        return NO_TASK.format(name=plain(explorer.name), other=other), None
    if explorer.task.task == "question-answering" and not run.encoding.is_pair:
        return ("**A question and a passage are needed:** type the question as sentence A and the passage to search "
                "as sentence B, then press Analyze."), None
    result = explorer.predict(run.encoding.text, run.encoding.text_pair)
    if isinstance(result, ClassPrediction):
        return (f"**{plain(result.label)}** ({result.probability:.1%}) according to {plain(explorer.name)}.",
                result.probabilities)
    if isinstance(result, TagPrediction):
        rows = "\n".join(f"| {plain(w.word)} | {plain(w.tag)} | {w.probability:.1%} |" for w in result.words)
        return f"A tag for every word, by {plain(explorer.name)}:\n\n| word | tag | probability |\n|---|---|---|\n{rows}", None
    if not result.answer:  # an AnswerPrediction
        return "**No answer found** in the passage.", None
    context = run.encoding.text_pair
    marked = (plain(context[:result.start]) + "**" + plain(result.answer) + "**" + plain(context[result.end:]))
    return (f"**Answer: {plain(result.answer)}** (first token {result.start_probability:.1%}, last token "
            f"{result.end_probability:.1%})\n\n> {marked}"), None


class TaskTab:
    def __init__(self, page: Page):
        self.page = page
        self.message = gr.Markdown(elem_id="task")
        self.label = gr.Label(label="Probability of each label", elem_id="task-label")

    @user_errors
    def show(self, session):
        alternatives = tuple(name for name, e in self.page.models.explorers.items() if e.task is not None)
        return task_view(*self.page.models.run_of(session), alternatives)

    def wire(self) -> None:
        pass  # nothing to change here but the input

    def after_analysis(self, event, public: bool):
        return event.then(self.show, [self.page.session], [self.message, self.label], **self.page.api("task", public))
