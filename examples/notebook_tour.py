"""A tour of the notebook API: one forward pass, then every view as numbers and as a figure.

    python examples/notebook_tour.py --out out/tour

writes the interactive attention views as one offline page (in a notebook, `run.show()` draws them inline), one
self-contained HTML file per plotly figure (they open offline) and the attention as CSV."""

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
        "attention": run.plot.attention(layer=0, head=2),
        "attention_mean_A_to_B": run.plot.attention(layer=3, head=None, segments="A->B", hide_special=True),
        "head_overview": run.plot.head_overview(),
        "head_map": run.plot.head_map("previous"),
        "token_attention": run.plot.token_attention(layer=0, token=2),
        "rollout": run.plot.rollout(),
        "query_key": run.plot.query_key(layer=0, head=2, token=3),
        "embedding_parts": run.plot.embedding_parts(),
        "position_similarity": run.plot.position_similarity(n=64),
        "position_path": run.plot.position_path(),
        "segments": run.plot.segment_comparison(),
        "hidden_norms": run.plot.hidden_norms(),
        "layer_similarity": run.plot.layer_similarity(),
        "token_similarity": run.plot.token_similarity(),
        "hidden_projection": run.plot.hidden_projection(),
    }
    for name, fig in figures.items():
        save_html(fig, args.out / f"{name}.html")
    views = run.save_html(args.out / "attention_views.html", view="matrix")  # lines, matrix, every head, query/key
    print(f"\nthe interactive views: {views} (in a notebook: run.show() or run.show('overview'))")
    csv = run.attention_csv(args.out / "attention.csv")
    print(f"\nwrote {len(figures)} figures and {csv} to {args.out}")


if __name__ == "__main__":
    main()
