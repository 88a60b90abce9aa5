"""A causal lab on subject-verb agreement, on the default model: "The keys to the cabinet [MASK]" should be "are",
"The key to the cabinet [MASK]" "is". Which heads carry the difference (activation patching), why "are" and not "is"
(contrastive integrated gradients and blank-out), what value zeroing sees that raw attention does not, and which
explanation predicts the model (deletion and insertion curves). Prints tables; with --out, writes the figures.

    python examples/causal_lab.py [--out DIR]"""

import argparse
from pathlib import Path

import numpy as np
import torch

import bertviz_app
from bertviz_app import causal, figures

CLEAN, CORRUPTED = "The keys to the cabinet [MASK] on the table.", "The key to the cabinet [MASK] on the table."


def top(weights: np.ndarray, labels: list[str], n: int = 3) -> str:
    order = np.argsort(-weights)[:n]
    return ", ".join(f"{labels[j]} {weights[j]:.2f}" for j in order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="a folder for the figures (HTML) and the attention table (CSV)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    explorer = bertviz_app.load(device="cpu")
    clean, corrupted = explorer.run(CLEAN), explorer.run(CORRUPTED)

    # 1. Which heads restore "are"? The clean run's head outputs put one at a time into the corrupted run.
    heads = clean.patch(corrupted, metric=("are", "is"), over="heads")
    print(f"{heads.attrs['metric']}: {heads.attrs['clean']:+.2f} on 'keys', {heads.attrs['corrupted']:+.2f} on 'key'")
    cells = heads.stack().sort_values(ascending=False)
    print("heads that restore the most of it (0 = the corrupted run, 1 = the clean one):")
    for (layer, head), share in cells.head(5).items():
        print(f"  layer {layer}, {head}: {share:+.2f}")
    positions = clean.patch(corrupted, metric=("are", "is"), over="positions")
    seconds = heads.attrs["seconds"] + positions.attrs["seconds"]
    print(f"the residual stream at 'keys' restores {positions.iloc[:, 2].round(2).tolist()} (layers 0 to 5); "
          f"{heads.size + positions.size} patched passes in {seconds:.2f} s")

    # 2. Why "are" and not "is"?
    why = explorer.contrast(CLEAN, "are", "is")
    print(f"\n{why.describe()}")
    print(why.to_frame().query("~fixed")[["token", "integrated gradients", "blank-out"]].round(2).to_string(index=False))

    # 3. What value zeroing sees that raw attention does not, in the [MASK]'s row.
    labels, mask = clean.labels, clean.tokens.index("[MASK]")
    attention = clean.attentions[-1].mean(axis=0)[mask]  # last layer, heads averaged
    zeroing = causal.aggregate(clean.value_zeroing())[-1][mask]  # every layer
    print(f"\nthe [MASK]'s row: raw attention (last layer) {top(attention, labels)}; "
          f"value zeroing (all layers) {top(zeroing, labels)}")
    special = np.array(clean.special_mask)
    print(f"share on [CLS] and [SEP]: attention {attention[special].sum():.2f}, value zeroing {zeroing[special].sum():.2f}")

    # 4. Which explanation predicts the model?
    curves = clean.faithfulness(("are", "is"), steps=20)
    print("\nAOPC of the logit difference (higher: the method's first tokens are the ones the model needs):")
    print(curves.aopc.round(2).to_string())

    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        clean.attention_csv(args.out / "attention.csv")
        figures.save_html(figures.patching_figure(heads.to_numpy(), metric=heads.attrs["metric"]),
                          args.out / "patching.html")
        figures.save_html(figures.attribution_figure(why.tokens, why.scores(), why.integrated_gradients.fixed,
                                                     title=figures.contrast_title("are", "is")),
                          args.out / "contrast.html")
        figures.save_html(figures.faithfulness_curves_figure(curves.deletion, curves.insertion, curves.aopc,
                                                             metric=curves.target.describe()),
                          args.out / "faithfulness.html")
        print(f"\nfigures in {args.out}")


if __name__ == "__main__":
    main()
