"""The Compare tab's "Patch B into A" (causal/patching.py): each head's output from the second input (B) put into the
analyzed input's run (A), and the share of the logit difference of two answers at the [MASK] that moves from A's value
(0) to B's (1). The map is a table coloured by value; a click on a cell opens that layer and head in both views above."""

from __future__ import annotations

import gradio as gr

from ..common import MAX_CHARS, refuse, text_value, user_errors

INTRO = ("**Patch B into A** (activation patching): each head's output computed on the second input (B) replaces "
         "that head's output on the analyzed input (A), and the cell says how far the logit difference of the two "
         "answers at the [MASK] moves from A's value (0) to B's (1). Both inputs need a [MASK] at the same place and "
         "as many tokens. Click a cell to open that head in both views.")


def _colour(value: float) -> str:
    """Blue for a share towards B, red for one away from it, white at 0: a cell's background, readable text."""
    v = max(-1.0, min(1.0, float(value))) if value == value else 0.0
    r, g, b = (255, int(255 * (1 - v)), int(255 * (1 - v))) if v < 0 else (int(255 * (1 - v)), int(255 * (1 - v)), 255)
    r, g, b = (int(255 - (255 - c) * 0.85) for c in (r, g, b))
    return f"background-color: rgb({r}, {g}, {b}); color: {'#fff' if abs(v) > 0.6 else '#111'}"


class PatchSection:
    """Built inside the Compare tab, under its comparison (`compare.CompareTab` calls it)."""

    def __init__(self, compare):
        self.compare, self.page = compare, compare.page
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            self.answer_b = gr.Textbox("are", label="B's answer", max_length=MAX_CHARS, scale=1,
                                       elem_id="patch-answer-b")
            self.answer_a = gr.Textbox("is", label="A's answer", max_length=MAX_CHARS, scale=1,
                                       elem_id="patch-answer-a")
            self.button = gr.Button("Patch B into A", scale=1, elem_id="compare-patch")
        self.message = gr.Markdown(elem_id="compare-patch-message")
        self.map = gr.Dataframe(interactive=False, label="Share of B's answer restored, a head a row, a layer a column",
                                visible=False, wrap=True, elem_id="compare-patch-map")
        self.inputs = gr.State(None)  # (B's sentence A, B's sentence B, its model) of the map shown

    @user_errors
    def patch(self, session, other_a, other_b, other_model, answer_b, answer_a):
        explorer, run_a = self.page.models.run_of(session)
        if other_model != session["model"]:
            raise refuse("Patching puts one input's activations into the other's run of the same model: pick the "
                         "analyzed input's model for the second input.")
        other_a, other_b = text_value(other_a, "The second sentence A"), text_value(other_b, "The second sentence B")
        if not other_a.strip():
            raise refuse("Type the second input (B) first: the same sentence with one word changed and a [MASK].")
        answer_b, answer_a = text_value(answer_b, "B's answer").strip(), text_value(answer_a, "A's answer").strip()
        run_b = explorer.run(other_a, other_b or None)
        try:
            frame = run_b.patch(run_a, metric=(answer_b, answer_a), over="heads")  # clean B restored into A
        except ValueError as why:  # different lengths, no [MASK], an answer not in the vocabulary: said in place
            return (f"**Not patched** (B is the clean input, A the corrupted one): {why}", gr.update(visible=False),
                    None, gr.update(), gr.update())
        best = frame.stack().idxmax()
        # a head a row and a layer a column: a phone has room for the default model's 6 layers, not for its 12 heads
        # (as 13 columns the table was 973 px wide on a 390 px screen); + 0.0 turns -0.00 into 0.00
        table = frame.T.round(2) + 0.0
        table.columns = [f"layer {i}" for i in frame.index]
        table.insert(0, "head", list(frame.columns))
        styled = table.style.map(_colour, subset=list(table.columns[1:])).format(precision=2)
        left, right = self._sides(session, explorer, run_a, run_b, other_model, best[0], int(best[1].split()[-1]))
        message = (f"{frame.attrs['metric']}: {frame.attrs['corrupted']:.2f} on A, {frame.attrs['clean']:.2f} on B. "
                   f"Most restored by layer {best[0]}, {best[1]} ({frame.loc[best]:.2f}); "
                   f"{frame.shape[0] * frame.shape[1]} patched passes in {frame.attrs['seconds']:.1f} s.")
        # in pixels (gradio reads a percentage as one of the screen's width): 6 layers fit a phone's 324 px
        widths = ["56px"] + ["44px"] * len(frame.index)
        return (message, gr.update(value=styled, visible=True, column_widths=widths), [other_a, other_b, other_model],
                left, right)

    def _sides(self, session, explorer, run_a, run_b, model, layer: int, head: int):
        left, right = self.compare.host.value(session["model"], run_a), self.compare.host.value(model, run_b)
        for side in (left, right):
            side["open"] = {"layer": int(layer), "head": int(head)}
        return left, right

    @user_errors
    def open_cell(self, session, inputs, event: gr.SelectData):
        if not inputs:
            raise refuse("Patch B into A first.")
        head, column = event.index
        if column == 0:
            return gr.update(), gr.update()
        explorer, run_a = self.page.models.run_of(session)
        run_b = explorer.run(inputs[0], inputs[1] or None)
        return self._sides(session, explorer, run_a, run_b, inputs[2], column - 1, head)

    def wire(self) -> None:
        tab = self.compare
        self.button.click(self.patch, [self.page.session, tab.other_a, tab.other_b, tab.other_model, self.answer_b,
                                       self.answer_a],
                          [self.message, self.map, self.inputs, tab.left, tab.right], **self.page.api("compare_patch"))
        self.map.select(self.open_cell, [self.page.session, self.inputs], [tab.left, tab.right],
                        **self.page.api("compare_patch_open"))


__all__ = ["PatchSection"]
