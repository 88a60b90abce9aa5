"""Beyond attention weights, on the default model: silence heads and watch a prediction change, rank every head by
its effect, attribute the prediction to the input tokens (integrated gradients, blank-out), ask how well attention,
rollout and value-weighted attention agree with that, and compare a minimal pair. Prints tables.

    python examples/beyond_attention.py"""

import numpy as np
import torch

import bertviz_app
from bertviz_app.analysis import spearman


def main() -> None:
    torch.set_num_threads(2)
    explorer = bertviz_app.load(device="cpu")
    text, pair = "The keys to the cabinet [MASK] on the table.", "They were lost yesterday."

    # 1. Which heads does the agreement 'keys ... are' depend on? Measure all 72, then silence the top five.
    measured = explorer.rank_heads(text, pair)
    estimated = explorer.rank_heads(text, pair, method="gradient")
    print(f"target: {measured.target.describe()}, P = {np.exp(measured.f_input):.3f}")
    print(measured.ranking().head(8).round(3).to_string(index=False))
    print(f"gradient estimate vs measurement, Spearman over 72 heads: "
          f"{spearman(estimated.effects.ravel(), measured.effects.ravel()):.2f}")
    result = explorer.ablate(text, measured.top(5), text_pair=pair)
    print(f"\nsilencing {result.heads}:")
    print(result.to_frame().round(3).to_string(index=False))
    print(f"P(IsNext) {result.is_next_before:.3f} -> {result.is_next_after:.3f}")

    # 2. Which input tokens does the prediction depend on?
    ig = explorer.attribute(text)
    blank = explorer.blank_out(text)
    print(f"\nintegrated gradients ({ig.steps} steps, {ig.method}): f(x) = {ig.f_input:.3f}, "
          f"f(baseline) = {ig.f_baseline:.3f}, sum of scores = {ig.scores.sum():.3f}, "
          f"delta = {ig.delta:.1e} ({ig.relative_delta:.1e} of the gap)")
    table = ig.to_frame()[["token", "score"]].rename(columns={"score": "integrated gradients"})
    table["blank-out"] = blank.scores
    print(table.round(3).to_string(index=False))

    # 3. Does attention agree with that? Spearman over the words (not [CLS], [SEP], [MASK]).
    panel = explorer.faithfulness(text)
    print(f"\nfaithfulness for {panel.target.describe()}:")
    print(panel.table.round(2).to_string())
    print(f"(integrated gradients vs blank-out: {panel.agreement:.2f})")

    # 4. Value-weighted attention and word-level attention of one run.
    run = explorer.run("The unaffable keys to the cabinet are on the table.")
    last = run.num_layers - 1
    weighted = run.value_weighted_attention(last)  # summed over heads
    raw = run.attention(last)
    are = run.tokens.index("are")
    print(f"\nlayer {last}, from {run.tokens[are]!r}: raw attention vs ||alpha f(x)|| (summed over heads)")
    for j in np.argsort(-weighted[are])[:5]:
        print(f"  {run.tokens[j]:>10}  raw {raw[are, j]:.3f}  value-weighted {weighted[are, j]:.3f}")
    words, merged = run.word_attention(last)
    print(f"words: {words}; word attention {merged.shape}, rows sum to {merged.sum(-1).min():.3f}")

    # 5. A minimal pair: which heads changed most between 'is' and 'are'?
    singular = explorer.run("The keys to the cabinet is on the table.")
    plural = explorer.run("The keys to the cabinet are on the table.")
    diff = singular.compare(plural)
    print(f"\n'is' -> 'are' (position {diff.differing}), heads that changed most:")
    print(diff.ranking().head(5).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
