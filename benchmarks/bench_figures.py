"""Figure build time and payload, from a cached Run (not a test). Prints a Markdown table for the README.

    python benchmarks/bench_figures.py [--tokens 64] [--repeat 7]

Build time: the median over `--repeat` calls of the Run method (analysis + figure, no serialization) for the
default model at `--tokens` tokens. Payload: the figure's JSON, for one head at 128 tokens on the default model
and for the overview of a random 12 x 12 model at 128 tokens. Budgets: 30 ms, 150 kB and 1 MB."""

import argparse
import statistics
import time

import torch

import bertviz_app
from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer, figures
from bertviz_app.catalog import minilm_path

VIEWS = {
    "attention (one head)": lambda r: r.plot.attention(layer=2, head=3),
    "attention (layer mean, A->B, no specials)": lambda r: r.plot.attention(2, None, hide_special=True,
                                                                              segments="A->B"),
    "head overview": lambda r: r.plot.head_overview(),
    "token across heads": lambda r: r.plot.token_attention(layer=2, token=5),
    "rollout": lambda r: r.plot.rollout(),
    "head map": lambda r: r.plot.head_map("entropy"),
    "query/key": lambda r: r.plot.query_key(layer=2, head=3, token=5),
    "embedding parts": lambda r: r.plot.embedding_parts(),
    "position similarity (128)": lambda r: r.plot.position_similarity(),
    "position path (128)": lambda r: r.plot.position_path(),
    "segments A vs B": lambda r: r.plot.segment_comparison(),
    "hidden norms": lambda r: r.plot.hidden_norms(),
    "layer-to-layer similarity": lambda r: r.plot.layer_similarity(),
    "token similarity": lambda r: r.plot.token_similarity(),
    "hidden projection": lambda r: r.plot.hidden_projection(),
}


def mlm_views(tokens: int) -> dict:
    """The masked-LM builders take plain data (the default model may have no MLM head): synthetic inputs of the
    sizes the app shows (top 10 per mask, 7 layers x top 5, one corrupted example of `tokens` tokens)."""
    top = [(f"word{i}", 0.5 / (i + 1)) for i in range(10)]
    kinds = ["mask" if i % 7 == 3 else "random" if i % 29 == 5 else "kept" if i % 31 == 6 else ""
             for i in range(tokens)]
    words = [f"w{i}" for i in range(tokens)]
    return {
        "fill mask (2 masks, top 10)": lambda: figures.fill_mask_figure([top, top]),
        "masked token (top 10)": lambda: figures.masked_token_figure("cat", top, 0.001, 120),
        "logit lens (7 layers x 5)": lambda: figures.logit_lens_figure([top[:5]] * 7, "word0", [0.1] * 7, "[MASK]"),
        f"corruption ({tokens} tokens)": lambda: figures.corruption_figure(words, words, words, kinds),
    }


def text_of(explorer: Explorer, tokens: int) -> tuple[str, str]:
    """A sentence pair that encodes to exactly `tokens` tokens (3 of them special)."""
    words = ("the cat sat on the mat while the dog slept near the warm fire and rain fell outside " * 20).split()
    half = (tokens - 3) // 2
    a, b = " ".join(words[:half]), " ".join(words[half:tokens - 3])
    if len(explorer.encode(a, b)) != tokens:
        raise RuntimeError("the benchmark text no longer encodes to the expected length")
    return a, b


def build_ms(run, view, repeat: int) -> float:
    view(run)  # warm: caches in the Run (head statistics, position PCA) are part of "a cached Run"
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        view(run)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    explorer = bertviz_app.load(device="cpu")
    run = explorer.run(*text_of(explorer, args.tokens))
    long_run = explorer.run(*text_of(explorer, 128))
    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=12, num_attention_heads=12, hidden_size=192, intermediate_size=384)
    big = Explorer(BertForPreTraining(config), Tokenizer.from_folder(minilm_path()), torch.device("cpu"),
                   "random 12x12")
    big_run = big.run(*text_of(big, 128))

    print(f"Default model ({explorer.config.num_hidden_layers} layers x {explorer.config.num_attention_heads} "
          f"heads), {args.tokens} tokens; median of {args.repeat}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads\n")
    print(f"| view | build (ms) at {args.tokens} tokens | JSON (kB) at {args.tokens} tokens | JSON (kB) at 128 |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for name, view in VIEWS.items():
        ms = build_ms(run, view, args.repeat)
        worst = max(worst, ms)
        kb = len(view(run).to_json()) / 1000
        kb128 = len(view(long_run).to_json()) / 1000
        print(f"| {name} | {ms:.1f} | {kb:.0f} | {kb128:.0f} |")
    for name, view in mlm_views(args.tokens).items():
        ms = build_ms(None, lambda _: view(), args.repeat)
        worst = max(worst, ms)
        print(f"| {name} | {ms:.1f} | {len(view().to_json()) / 1000:.0f} | |")
    head_kb = len(VIEWS["attention (one head)"](long_run).to_json()) / 1000
    overview_kb = len(big_run.plot.head_overview().to_json()) / 1000
    print(f"\nslowest view: {worst:.1f} ms (budget 30 ms)")
    print(f"one head at 128 tokens: {head_kb:.0f} kB (budget 150 kB)")
    print(f"overview of a 12 x 12 model at 128 tokens: {overview_kb:.0f} kB (budget 1000 kB)")


if __name__ == "__main__":
    main()
