"""Beyond attention weights, on the default model: silence heads and watch a prediction change, rank every head by
its effect, attribute the prediction to the input tokens (integrated gradients, blank-out), and ask how well
attention, rollout and value-weighted attention agree with that. Prints tables.

    python examples/beyond_attention.py"""

import numpy as np
import torch

import bertviz_app
from bertviz_app.ablation import ablate, rank_heads
from bertviz_app.analysis.compare import compare_attentions
from bertviz_app.analysis.faithfulness import spearman
from bertviz_app.analysis.value_weighted import value_weighted_attention
from bertviz_app.analysis.words import group_words, word_attention
from bertviz_app.attribution import attribute, blank_out, faithfulness


def main() -> None:
    torch.set_num_threads(2)
    explorer = bertviz_app.load(device="cpu")
    model, tokenizer = explorer.model, explorer.tokenizer
    text, pair = "The keys to the cabinet [MASK] on the table.", "They were lost yesterday."

    # 1. Which heads does the agreement 'keys ... are' depend on? Measure all 72, then silence the top five.
    measured = rank_heads(model, tokenizer, text, pair)
    estimated = rank_heads(model, tokenizer, text, pair, method="gradient")
    print(f"target: {measured.target.describe()}, P = {np.exp(measured.f_input):.3f}")
    print(measured.ranking().head(8).round(3).to_string(index=False))
    print(f"gradient estimate vs measurement, Spearman over 72 heads: "
          f"{spearman(estimated.effects.ravel(), measured.effects.ravel()):.2f}")

    result = ablate(model, tokenizer, text, measured.top(5), text_pair=pair)
    print(f"\nsilencing {result.heads}:")
    print(result.to_frame().round(3).to_string(index=False))
    print(f"P(IsNext) {result.is_next_before:.3f} -> {result.is_next_after:.3f}")

    # 2. Which input tokens does the prediction depend on?
    ig = attribute(model, tokenizer, text)
    blank = blank_out(model, tokenizer, text)
    print(f"\nintegrated gradients ({ig.steps} steps, {ig.method}): f(x) = {ig.f_input:.3f}, "
          f"f(baseline) = {ig.f_baseline:.3f}, sum of scores = {ig.scores.sum():.3f}, "
          f"delta = {ig.delta:.1e} ({ig.relative_delta:.1e} of the gap)")
    table = ig.to_frame()[["token", "score"]].rename(columns={"score": "integrated gradients"})
    table["blank-out"] = blank.scores
    print(table.round(3).to_string(index=False))

    # 3. Does attention agree with that? Spearman over the words (not [CLS], [SEP], [MASK]).
    panel = faithfulness(model, tokenizer, text)
    print(f"\nfaithfulness for {panel.target.describe()}:")
    print(panel.table.round(2).to_string())
    print(f"(integrated gradients vs blank-out: {panel.agreement:.2f})")

    # 4. Value-weighted attention and word-level attention of one run (the Grams come from the model on request).
    run = explorer.run("The unaffable keys to the cabinet are on the table.")
    with torch.inference_mode():
        out = model.bert(torch.tensor([run.encoding.ids]), torch.tensor([run.encoding.segment_ids]),
                         output_value_grams=True)
    grams = torch.stack([g[0] for g in out.value_grams]).numpy()  # (L, T, h, h)
    last = run.num_layers - 1
    weighted = value_weighted_attention(run.attentions, grams, last)
    raw = run.attention(last)
    are = run.tokens.index("are")
    print(f"\nlayer {last}, from {run.tokens[are]!r}: raw attention vs ||alpha f(x)|| (summed over heads)")
    for j in np.argsort(-weighted[are])[:5]:
        print(f"  {run.tokens[j]:>10}  raw {raw[are, j]:.3f}  value-weighted {weighted[are, j]:.3f}")
    words = group_words(run.tokens, run.special_mask)
    merged = word_attention(run.attention(last), words)
    print(f"words: {words.words}; word attention {merged.shape}, rows sum to {merged.sum(-1).min():.3f}")

    # 5. A minimal pair: which heads changed most between 'is' and 'are'?
    singular = explorer.run("The keys to the cabinet is on the table.")
    plural = explorer.run("The keys to the cabinet are on the table.")
    diff = compare_attentions(singular.attentions, plural.attentions, singular.tokens, plural.tokens,
                              rows=[i for i in range(len(plural)) if plural.tokens[i] not in ("is", "are")])
    print(f"\n'is' -> 'are' (position {diff.differing}), heads that changed most elsewhere in the sentence:")
    print(diff.ranking().head(5).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
