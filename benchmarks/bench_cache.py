"""What one cached Run weighs, in float32 and in float16 (`--cache-dtype`), and how many fit in `--cache-mb` (not a
test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_cache.py [--tokens 32,128,256,512] [--cache-mb 256]

For each length a sentence pair of exactly that many tokens (bench_views' prose) goes through the default model on
the CPU, once per dtype, as the served app does it: the forward pass, then the views' payload (which also keeps the
rollout and head statistics on the Run). "Run" is what the explorer's cache counts for it (`Run.nbytes`: its arrays
and what it derived); "of it attention" is the (L, h, T, T) array alone. Sizes are exact byte counts, not timings:
the machine's load does not move them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_views import sample_pair  # noqa: E402  (the same inputs as the views' benchmark)

MB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", default="32,128,256,512")
    parser.add_argument("--cache-mb", type=float, default=None, help="default: the served default (limits.py)")
    args = parser.parse_args()
    from bertviz_app import limits
    from bertviz_app.explorer import Explorer, load

    cache_mb = limits.CACHE_MB if args.cache_mb is None else args.cache_mb
    base = load(device="cpu", max_tokens=512)
    explorers = {dtype: Explorer(base.model, base.tokenizer, base.device, base.name, cache_dtype=dtype)
                 for dtype in ("float32", "float16")}
    print(f"\n{base.name}: {base.config.num_hidden_layers} layers x {base.config.num_attention_heads} heads; "
          f"--cache-mb {cache_mb:g}\n")
    print("| tokens | cache dtype | Run | of it attention | views payload | Runs in the cache |")
    print("|---|---|---|---|---|---|")
    for tokens in (int(t) for t in args.tokens.split(",")):
        a, b = sample_pair(base, tokens)
        for dtype, explorer in explorers.items():
            run = explorer.run(a, b)
            assert len(run) == tokens and run.attentions.dtype.name == dtype
            payload = len(run.views_payload())
            print(f"| {tokens} | {dtype} | {run.nbytes / MB:.2f} MB | {run.attentions.nbytes / MB:.2f} MB | "
                  f"{payload / MB:.2f} MB | {int(cache_mb * MB // run.nbytes)} |")


if __name__ == "__main__":
    main()
