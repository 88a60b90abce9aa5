"""A tour of the notebook API: one forward pass, then every view as numbers and as a figure.

    python examples/notebook_tour.py --out out/tour

writes one self-contained HTML file per figure (they open offline) and the attention as CSV."""

import argparse
from pathlib import Path

import bertviz_app
from bertviz_app.figures import save_html


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("out/tour"), help="folder for the HTML and CSV files")
    args = parser.parse_args()

    run = bertviz_app.load(device="cpu").run("The cat sat on the mat.", "It was tired.")
    print(run)
    print(run.token_table().to_string(index=False))

    stats = run.head_statistics().to_frame()
    print("\nheads with a clear job:")
    print(stats[~stats.dominant.isin(["broad", "mixed"])][["layer", "head", "dominant"]].to_string(index=False))

    qk = run.query_key(layer=0, head=2, token=3)
    print(f"\nlayer 0, head 2: {run.tokens[3]!r} attends most to {run.tokens[qk.weights.argmax()]!r} "
          f"({qk.weights.max():.2f})")

    figures = {
        "attention": run.attention_figure(layer=0, head=2),
        "attention_mean_A_to_B": run.attention_figure(layer=3, head=None, segments="A->B", hide_special=True),
        "head_overview": run.head_overview_figure(),
        "head_map": run.head_map_figure("previous"),
        "token_attention": run.token_attention_figure(layer=0, token=2),
        "rollout": run.rollout_figure(),
        "query_key": run.query_key_figure(layer=0, head=2, token=3),
        "embedding_parts": run.embedding_figure(),
        "position_similarity": run.position_similarity_figure(n=64),
        "position_path": run.position_path_figure(),
        "segments": run.segment_figure(),
        "hidden_norms": run.hidden_norms_figure(),
        "layer_similarity": run.layer_similarity_figure(),
        "token_similarity": run.token_similarity_figure(),
        "hidden_projection": run.hidden_projection_figure(),
    }
    for name, fig in figures.items():
        save_html(fig, args.out / f"{name}.html")
    csv = run.attention_csv(args.out / "attention.csv")
    print(f"\nwrote {len(figures)} figures and {csv} to {args.out}")


if __name__ == "__main__":
    main()
