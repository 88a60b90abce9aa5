"""Which heads look at the previous token, and does that hold for another sentence? Prints a small table.

    python examples/compare_heads.py"""

import bertviz_app


def main() -> None:
    explorer = bertviz_app.load(device="cpu")
    sentences = ["The quick brown fox jumps over the lazy dog.",
                 "Attention heads in BERT often learn simple positional patterns."]
    frames = [explorer.run(s).head_statistics().to_frame().set_index(["layer", "head"]) for s in sentences]
    both = frames[0][["previous", "dominant"]].join(frames[1][["previous", "dominant"]], rsuffix=" (2nd)")
    print(both.sort_values("previous", ascending=False).head(8).round(3).to_string())


if __name__ == "__main__":
    main()
