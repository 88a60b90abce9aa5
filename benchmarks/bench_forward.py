"""Forward-pass speed: our BERT against transformers' BertModel on the same weights and inputs, in one process.

Two comparisons, each at several input sizes:
  outputs  attentions and hidden states requested (what the explorer needs): ours vs transformers "eager"
  plain    nothing requested, so ours takes the fused scaled_dot_product_attention path: ours vs transformers "sdpa"

The two models run alternately (ours, theirs, theirs, ours, ...), so that a neighbour loading the machine, a CPU
frequency change or a cache warming up hits both sides alike: on a shared machine the absolute milliseconds drift, the
ratios stay. Each case reports medians with their inter-quartile range, and the median of the paired ratios
(ours / theirs of the same repetition), which is what the targets are checked against.

    .venv/bin/python benchmarks/bench_forward.py            # the full run (a few minutes on 2 cores)
    .venv/bin/python benchmarks/bench_forward.py --quick    # smoke run, seconds
    .venv/bin/python benchmarks/bench_forward.py --device cuda --threads 8
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

# Runnable as `python benchmarks/bench_forward.py` from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertviz_app  # noqa: E402
from bertviz_app.checkpoint import load_model  # noqa: E402
from bertviz_app.catalog import minilm_path
from bertviz_app.device import resolve_device  # noqa: E402
from bertviz_app.model import BertModel  # noqa: E402

FULL_SIZES = ((1, 16), (1, 128), (1, 512), (8, 128))  # (batch, tokens)
QUICK_SIZES = ((1, 16), (1, 128))
TARGET_RATIO = 1.0  # issue #2: ours may not be slower than transformers in either comparison
MODES = {
    # mode: (what is requested, transformers attention implementation)
    "outputs": (dict(output_attentions=True, output_hidden_states=True), "eager"),  # transformers' flags
    "plain": ({}, "sdpa"),
}


# ------------------------------------------------------------------------------------------------------------------
# The machine and the inputs
# ------------------------------------------------------------------------------------------------------------------
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())  # 1, 5 and 15 minutes, as `uptime` shows
    except OSError:
        return "n/a"


def make_inputs(batch: int, tokens: int, vocab_size: int, cls_id: int, sep_id: int, device: torch.device,
                seed: int = 0) -> dict[str, torch.Tensor]:
    """Random ids laid out as a sentence pair, `[CLS] A [SEP] B [SEP]`, with segment ids 0 over `[CLS] A [SEP]` and 1
    over `B [SEP]`, so that both segment embeddings are used as in real input. No padding."""
    if tokens < 5:
        raise ValueError(f"a [CLS] A [SEP] B [SEP] layout needs at least 5 tokens, got {tokens}")
    g = torch.Generator().manual_seed(seed)
    # Ids above 1000 are ordinary word pieces in BERT vocabularies (the special and unused tokens come first).
    ids = torch.randint(1000, vocab_size, (batch, tokens), generator=g)
    first_sep = tokens // 2
    ids[:, 0] = cls_id
    ids[:, first_sep] = sep_id
    ids[:, -1] = sep_id
    types = torch.zeros(batch, tokens, dtype=torch.long)
    types[:, first_sep + 1:] = 1
    return dict(input_ids=ids.to(device), token_type_ids=types.to(device),
                attention_mask=torch.ones(batch, tokens, dtype=torch.long, device=device))


# ------------------------------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Timing:
    ours: list[float]  # seconds per forward pass, one per repetition
    theirs: list[float]

    @staticmethod
    def _quartiles(xs: list[float]) -> tuple[float, float, float]:
        if len(xs) < 2:
            return xs[0], xs[0], xs[0]
        q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        return q1, q2, q3

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.ours, self.theirs)]

    def summary(self, side: str) -> tuple[float, float, float]:
        """(median, q1, q3) in milliseconds for 'ours' or 'theirs', or the plain ratio for 'ratio'."""
        xs = self.ratios if side == "ratio" else [1e3 * x for x in getattr(self, side)]
        q1, q2, q3 = self._quartiles(xs)
        return q2, q1, q3


def time_pair(ours, theirs, device: torch.device, warmup: int, repeats: int, min_seconds: float) -> Timing:
    """Alternate the two callables in ABBA order (ours, theirs, theirs, ours, ...) so that neither always runs second,
    after a shared warm-up; keep going past `repeats` until both have used `min_seconds`."""
    def timed(fn) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # kernels are asynchronous: wait for them, or we time the launches
        return time.perf_counter() - start

    for _ in range(warmup):
        ours()
        theirs()
    result = Timing([], [])
    i = 0
    while i < repeats or min(sum(result.ours), sum(result.theirs)) < min_seconds:
        if i % 2 == 0:
            result.ours.append(timed(ours))
            result.theirs.append(timed(theirs))
        else:
            result.theirs.append(timed(theirs))
            result.ours.append(timed(ours))
        i += 1
        if i >= 20 * max(repeats, 1):  # a hard stop for very slow cases
            break
    return result


# ------------------------------------------------------------------------------------------------------------------
# Models
# ------------------------------------------------------------------------------------------------------------------
def load_theirs(folder: Path, attn_implementation: str, device: torch.device):
    try:
        from transformers import BertModel as HFBertModel
        from transformers.utils import logging as hf_logging
    except ImportError:
        raise SystemExit("transformers is the peer of this benchmark: install the test extras "
                         "(`pip install -e '.[test]'`)") from None
    hf_logging.disable_progress_bar()  # its per-load bar would clutter the table we print
    model = HFBertModel.from_pretrained(folder, attn_implementation=attn_implementation, dtype=torch.float32)
    return model.to(device).eval()


def ours_request(request: dict) -> dict:
    """transformers' output flags as our named points: the same hidden states and attentions."""
    return {"capture": ("embeddings", "layer.*.output", "layer.*.attention.probs")} if request else {}


def check_same_function(ours, theirs, inputs: dict, mode: str, request: dict) -> float:
    """Both models must compute the same thing, or the timing compares nothing. Returns the largest difference of the
    last hidden state (and of the attentions when they are requested)."""
    a, b = ours(**inputs, **ours_request(request)), theirs(**inputs, **request)
    diffs = [(a.last_hidden_state - b.last_hidden_state).abs().max().item()]
    if request.get("output_attentions"):
        mine = a.layers("attention.probs")
        diffs += [(x - y).abs().max().item() for x, y in zip(mine, b.attentions)]
        if len(mine) != len(b.attentions) or len(a.layers("output")) + 1 != len(b.hidden_states):
            raise RuntimeError(f"{mode}: the two models return different numbers of layers")
    worst = max(diffs)
    if worst > 1e-3:
        raise RuntimeError(f"{mode}: our model and transformers disagree by {worst:.2e}; fix that before timing")
    return worst


# ------------------------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (default: cpu)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads; fixed so runs compare (default: the number of CPUs, at most 8)")
    p.add_argument("--model", default=None, help="checkpoint folder (default: the embedded all-MiniLM-L6-v2)")
    p.add_argument("--quick", action="store_true", help="a fast smoke run: small sizes, few repetitions")
    p.add_argument("--repeats", type=int, default=None, help="timed repetitions per model and case (default 30)")
    p.add_argument("--warmup", type=int, default=None, help="untimed passes per model and case (default 5)")
    p.add_argument("--min-seconds", type=float, default=None,
                   help="keep repeating until each side has run this long (default 1.0)")
    p.add_argument("--sizes", default=None,
                   help="comma-separated BATCHxTOKENS, e.g. 1x16,1x128,8x128 (default: 1x16,1x128,1x512,8x128)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 30)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 5)
    min_seconds = args.min_seconds if args.min_seconds is not None else (0.0 if args.quick else 1.0)
    if args.sizes:
        sizes = tuple(tuple(int(n) for n in s.lower().split("x")) for s in args.sizes.split(","))
    else:
        sizes = QUICK_SIZES if args.quick else FULL_SIZES
    threads = args.threads or min(os.cpu_count() or 1, 8)
    torch.set_num_threads(threads)
    device = resolve_device(args.device)
    folder = Path(args.model) if args.model else minilm_path()

    # The whole default load, once: reading the weights, building the model and the tokenizer (issue #2: seconds).
    start = time.perf_counter()
    explorer = bertviz_app.load(args.model, device=device)
    load_seconds = time.perf_counter() - start
    tokenizer = explorer.tokenizer
    del explorer

    ours, _ = load_model(folder, BertModel)
    ours = ours.to(device).eval()
    theirs = {impl: load_theirs(folder, impl, device) for impl in sorted({impl for _, impl in MODES.values()})}
    vocab_size = ours.config.vocab_size

    gpu = f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""
    print(f"machine: {cpu_model()}{gpu}, {os.cpu_count()} CPUs, torch.set_num_threads({threads}), "
          f"torch {torch.__version__}, Python {platform.python_version()}", flush=True)
    try:
        import transformers
        print(f"peer: transformers {transformers.__version__}; model: {folder.name if args.model else 'all-MiniLM-L6-v2'} "
              f"({ours.config.num_hidden_layers} layers, hidden {ours.config.hidden_size}, "
              f"{ours.config.num_attention_heads} heads); device {device}", flush=True)
    except ImportError:
        pass
    print(f"bertviz_app.load(): {load_seconds:.2f} s (weights, model and tokenizer)", flush=True)
    print(f"load average before timing: {load_average()}", flush=True)
    print(f"{warmup} warm-up and >= {repeats} timed passes per side and case, min {min_seconds:g} s per side",
          flush=True)

    rows = []
    with torch.inference_mode():
        for mode, (request, impl) in MODES.items():
            peer = theirs[impl]
            for batch, tokens in sizes:
                inputs = make_inputs(batch, tokens, vocab_size, tokenizer.cls_token_id, tokenizer.sep_token_id,
                                     device)
                diff = check_same_function(ours, peer, inputs, mode, request)
                ours_asks = ours_request(request)
                timing = time_pair(lambda: ours(**inputs, **ours_asks), lambda: peer(**inputs, **request),
                                   device, warmup, repeats, min_seconds)
                rows.append((mode, impl, batch, tokens, timing, diff))
                o, t, r = timing.summary("ours"), timing.summary("theirs"), timing.summary("ratio")
                print(f"  {mode:8s} {batch}x{tokens:<4d} ours {o[0]:8.2f} ms  transformers-{impl} {t[0]:8.2f} ms  "
                      f"ratio {r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}]  n={len(timing.ours)}  max|diff| {diff:.1e}",
                      flush=True)

    print(f"load average after timing: {load_average()}\n")
    print(markdown_table(rows))
    return 0


def markdown_table(rows) -> str:
    lines = ["| requested | peer | batch x tokens | ours ms (IQR) | transformers ms (IQR) | ours / theirs (IQR) | "
             f"target <= {TARGET_RATIO:g} |",
             "|---|---|---|---|---|---|---|"]
    labels = {"outputs": "attentions + hidden states", "plain": "nothing (fused path)"}
    for mode, impl, batch, tokens, timing, _ in rows:
        o, t, r = timing.summary("ours"), timing.summary("theirs"), timing.summary("ratio")
        # Within about 3 % counts as even: that is the repeatability of the ratio on a shared machine.
        verdict = "yes" if r[0] <= TARGET_RATIO else ("even" if r[0] <= TARGET_RATIO * 1.03 else "**no**")
        lines.append(f"| {labels[mode]} | {impl} | {batch} x {tokens} | {o[0]:.2f} ({o[1]:.2f}-{o[2]:.2f}) | "
                     f"{t[0]:.2f} ({t[1]:.2f}-{t[2]:.2f}) | {r[0]:.2f} ({r[1]:.2f}-{r[2]:.2f}) | {verdict} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
