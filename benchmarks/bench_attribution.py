"""Speed of integrated gradients and of the head-ablation ranking on the default model, as ratios against peers run in
the same process, and the convergence of the two integration rules.

    attribution  attribute(): 50 Gauss-Legendre steps on a 32-token input (target: <= 1 s on 2 CPU cores), against
                 (a) the same 50 steps unbatched, one forward+backward pass per step (the naive implementation), and
                 (b) one batched forward+backward pass of the 50 path points alone (the floor: no target, no
                 quadrature, no endpoints)
    ranking      rank_heads(): all 72 heads silenced one at a time (target: <= 2 s), against (a) 72 separate full
                 forward passes with a head mask, and (b) one forward pass of a batch of 72, each example with its own
                 head mask (batched, but every example runs every layer); and the gradient estimate
    explain      the Beyond attention tab's Explain at 256 tokens (a 600-word paste cut by the server), where the time
                 goes: integrated gradients' 50 steps, blank-out of each word piece, the 72 heads silenced, each in
                 seconds and in passes of the input (the progress bar's unit), against one batched pass of the input
    convergence  |delta| / |f(x) - f(x')| at several step counts for both rules, on a few sentences
    memory       peak resident memory of one batch against the estimate the batch sizes come from (Linux; each case
                 in a fresh process)

Each pair of callables runs alternately (A, B, B, A, ...) so that a neighbour loading the machine hits both alike;
the ratio reported is the median of the per-repetition ratios. On a shared machine the milliseconds drift, the
ratios much less.

    .venv/bin/python benchmarks/bench_attribution.py                 # everything, ~2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_attribution.py --quick         # fewer repetitions
    .venv/bin/python benchmarks/bench_attribution.py --threads 1 --only attribution ranking
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

# Runnable as `python benchmarks/bench_attribution.py` from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertviz_app  # noqa: E402
from bertviz_app.ablation import head_mask_for, rank_heads  # noqa: E402
from bertviz_app.attribution import _embeddings_and_baseline, _fixed_positions, attribute  # noqa: E402
from bertviz_app.attribution import _target_function, integration_points  # noqa: E402
from bertviz_app.targets import example_bytes, resolve_target  # noqa: E402
from bench_forward import cpu_model, load_average  # noqa: E402  (this folder is the script's: on sys.path)

# 32 tokens with [CLS] and [SEP] in the default model's vocabulary (checked at start-up).
SENTENCE_32 = ("After a long and tiring day at the office, she walked home slowly through the quiet park and made "
               "herself a hot cup of [MASK] before bed.")
CONVERGENCE = [("The capital of France is [MASK].", None, "mask"),
               ("She poured a cup of [MASK] and sat down by the window to read.", None, "mask"),
               (SENTENCE_32, None, "mask"),
               ("The cat sat on the mat.", "It was warm there.", "is_next")]
STEP_COUNTS = (5, 10, 20, 30, 50, 100)


def alternate(a, b, repeats: int, device: torch.device, warmup: int = 1) -> tuple[list[float], list[float]]:
    """Seconds per call of `a` and `b`, alternated in ABBA order after a shared warm-up. On CUDA the clock is read
    after a synchronize, since kernels run asynchronously."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        a(), b()
    ta, tb = [], []
    for i in range(repeats):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            sync()
            start = time.perf_counter()
            fn()
            sync()
            out.append(time.perf_counter() - start)
    return ta, tb


def ms(xs: list[float]) -> str:
    if len(xs) >= 2:
        q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q2 = q3 = xs[0]
    return f"{1e3 * q2:8.0f} ({1e3 * q1:.0f}-{1e3 * q3:.0f})"


def ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------------------------------
# Peers
# ------------------------------------------------------------------------------------------------------------------
def ig_peers(explorer, text: str, steps: int):
    """(naive: one forward+backward per path point, floor: one batched forward+backward of all points)."""
    model, tokenizer = explorer.model, explorer.tokenizer
    encoding = tokenizer.encode(text)
    target = resolve_target(model, tokenizer, encoding)
    fixed = _fixed_positions(tokenizer, encoding)
    inputs, reference = _embeddings_and_baseline(model, tokenizer, encoding, "pad", fixed)
    function = _target_function(model, encoding, target)
    alphas, weights = integration_points(steps)

    def naive():
        total = torch.zeros_like(inputs)
        for a, w in zip(alphas, weights):
            point = (reference + float(a) * (inputs - reference)).requires_grad_(True)[None]
            (grad,) = torch.autograd.grad(function(point).sum(), point)
            total += float(w) * grad[0]
        return ((inputs - reference) * total).sum(-1)

    points = reference + torch.tensor(alphas, dtype=inputs.dtype, device=inputs.device)[:, None, None] * (
        inputs - reference)  # (steps, T, H)
    types = torch.tensor([encoding.segment_ids], device=inputs.device).expand(steps, -1)

    def floor():
        x = points.clone().requires_grad_(True)
        out = model.bert(inputs_embeds=x, token_type_ids=types)
        torch.autograd.grad(out.last_hidden_state[:, target.position].sum(), x)

    return naive, floor


def ranking_peers(explorer, text: str):
    model, tokenizer = explorer.model, explorer.tokenizer
    encoding = tokenizer.encode(text)
    L, h = model.config.num_hidden_layers, model.config.num_attention_heads
    ids = torch.tensor([encoding.ids], device=model.device)
    types = torch.tensor([encoding.segment_ids], device=model.device)
    heads = [(layer, head) for layer in range(L) for head in range(h)]
    position = encoding.ids.index(tokenizer.mask_token_id)

    @torch.inference_mode()
    def naive():
        for pair in heads:
            out = model.bert(ids, types, head_mask=head_mask_for([pair], L, h, model.device))
            model.cls.predictions(out.last_hidden_state[:, position])

    batched_mask = torch.ones(L, len(heads), h, device=model.device)  # (L, B, h): example k silences head k
    for k, (layer, head) in enumerate(heads):
        batched_mask[layer, k, head] = 0.0

    @torch.inference_mode()
    def batched():
        out = model.bert(ids.expand(len(heads), -1), types.expand(len(heads), -1), head_mask=batched_mask)
        model.cls.predictions(out.last_hidden_state[:, position])

    return naive, batched


# ------------------------------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------------------------------
def bench_attribution(explorer, repeats: int) -> None:
    steps = 50
    # the text encoded inside, as the explorer's attribute() does it
    ours = lambda: attribute(explorer.model, explorer.tokenizer, explorer.encode(SENTENCE_32),  # noqa: E731
                             steps=steps)
    naive, floor = ig_peers(explorer, SENTENCE_32, steps)
    result = ours()
    print(f"\nIntegrated gradients, {steps} Gauss-Legendre steps, {len(result.tokens)} tokens "
          f"(batch {result.batch_size}; relative delta {result.relative_delta:.1e})")
    print(f"{'peer':<44} {'ours ms (IQR)':>18} {'peer ms (IQR)':>18} {'ours/peer':>10}")
    for name, peer in (("naive: one forward+backward per step", naive),
                       ("floor: one batched forward+backward, 50 pts", floor)):
        a, b = alternate(ours, peer, repeats, explorer.device)
        print(f"{name:<44} {ms(a):>18} {ms(b):>18} {ratio(a, b):>10.2f}")
    print(f"target: attribute() <= 1000 ms; median here {1e3 * statistics.median(a):.0f} ms")


def bench_ranking(explorer, repeats: int) -> None:
    text = SENTENCE_32
    ours = lambda: rank_heads(explorer.model, explorer.tokenizer, explorer.encode(text))  # noqa: E731
    gradient = lambda: rank_heads(explorer.model, explorer.tokenizer, explorer.encode(text),  # noqa: E731
                                  method="gradient")
    naive, batched = ranking_peers(explorer, text)
    print(f"\nHead ranking, all {explorer.config.num_hidden_layers * explorer.config.num_attention_heads} heads "
          f"silenced one at a time, {len(explorer.encode(text))} tokens")
    print(f"{'peer':<44} {'ours ms (IQR)':>18} {'peer ms (IQR)':>18} {'ours/peer':>10}")
    for name, peer in (("naive: 72 full forward passes", naive),
                       ("one batch of 72, every layer", batched),
                       ("(gradient estimate, one backward pass)", gradient)):
        a, b = alternate(ours, peer, repeats, explorer.device)
        print(f"{name:<44} {ms(a):>18} {ms(b):>18} {ratio(a, b):>10.2f}")
    print(f"target: rank_heads() <= 2000 ms; median here {1e3 * statistics.median(a):.0f} ms")


def bench_explain(explorer, tokens: int = 256) -> None:
    """The tab's Explain at `tokens` tokens, part by part, each against the peer: one batched forward pass of the
    same input timed just before and just after the part (the load of a shared machine moves; the ratio to a pass
    timed beside it much less). Blank-out both ways: one word piece at a time, and as the tab runs it on a long
    input (runs of whole words, at most EXPLAIN_BLANK_OUT_PASSES passes)."""
    from bertviz_app.ablation import ablation_passes
    from bertviz_app.app.tabs.beyond import EXPLAIN_BLANK_OUT_PASSES
    from bertviz_app.attribution import PASSES_PER_STEP, blank_out, blank_out_passes, seconds_per_pass

    words = ("the cat sat on the mat near a warm fire and the dog slept " * 40).split()
    encoding = explorer.encode(" ".join(words[:tokens - 4]) + " [MASK] .")
    model, tokenizer = explorer.model, explorer.tokenizer
    bound = EXPLAIN_BLANK_OUT_PASSES
    seconds_per_pass(model, encoding)  # warm-up
    parts = (("integrated gradients, 50 steps", PASSES_PER_STEP * 50, lambda: attribute(model, tokenizer, encoding)),
             (f"blank-out, {blank_out_passes(tokenizer, encoding)} word pieces one at a time",
              blank_out_passes(tokenizer, encoding), lambda: blank_out(model, tokenizer, encoding)),
             (f"blank-out in runs of words, <= {bound}", blank_out_passes(tokenizer, encoding, bound),
              lambda: blank_out(model, tokenizer, encoding, max_passes=bound)),
             ("72 heads silenced in turn", ablation_passes(model.config), lambda: rank_heads(model, tokenizer,
                                                                                           encoding)))
    print(f"\nExplain at {len(encoding)} tokens, against one batched pass of the input timed beside each part")
    print(f"{'part':<46} {'s':>7} {'pass ms':>8} {'passes':>7} {'s / peer pass':>14} {'per counted':>12}")
    totals = {}
    for name, passes, fn in parts:
        before = seconds_per_pass(model, encoding)
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        unit = (before + seconds_per_pass(model, encoding)) / 2
        totals[name] = (took, took / unit)
        print(f"{name:<46} {took:>7.1f} {1e3 * unit:>8.0f} {passes:>7.0f} {took / unit:>14.0f} "
              f"{took / unit / passes:>12.2f}")
    names = list(totals)
    tab = [names[0], names[2], names[3]]
    exact = [names[0], names[1], names[3]]
    for label, chosen in (("Explain as the tab runs it", tab), ("every word piece blanked alone", exact)):
        seconds, passes = sum(totals[n][0] for n in chosen), sum(totals[n][1] for n in chosen)
        print(f"{label:<46} {seconds:>7.1f} s = {passes:.0f} peer passes; target <= 15 s on 2 cores")


def bench_convergence(explorer) -> None:
    print("\nConvergence: |delta| / |f(x) - f(x')| (pad baseline)")
    header = f"{'input':<40} {'rule':<15}" + "".join(f"{s:>9}" for s in STEP_COUNTS)
    print(header)
    for text, pair, target in CONVERGENCE:
        label = (text if pair is None else f"{text} | {pair}")[:38] + f" ({target})"
        for method in ("gauss-legendre", "trapezoid"):
            cells = [attribute(explorer.model, explorer.tokenizer, explorer.encode(text, pair), steps=s, target=target,
                               method=method).relative_delta for s in STEP_COUNTS]
            print(f"{label[:40]:<40} {method:<15}" + "".join(f"{c:>9.1e}" for c in cells))


MEMORY_PROBE = r"""
import sys, torch
torch.set_num_threads(1)
import bertviz_app
from bertviz_app.attribution import _target_function
from bertviz_app.targets import Target, example_bytes
tokens, n, backward = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
explorer = bertviz_app.load(device="cpu")
model = explorer.model
encoding = explorer.tokenizer.encode(" ".join(["word"] * (tokens - 3)) + " [MASK]")
function = _target_function(model, encoding, Target("mask", tokens - 2, 1000, "x", 0))
points = model.bert.embeddings.word_embeddings.weight[torch.tensor(encoding.ids)].detach().expand(n, -1, -1).clone()
with torch.inference_mode():
    model.bert(torch.tensor([encoding.ids[:2]]))  # one-off buffers of the code paths are not the batch's
def status(key):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(key))
open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current resident size
base = status("VmRSS")
if backward:
    points.requires_grad_(True)
    torch.autograd.grad(function(points).sum(), points)
else:
    with torch.inference_mode():
        function(points)
print(status("VmHWM") - base, n * example_bytes(model.config, tokens, backward))
"""


def bench_memory() -> None:
    if not Path("/proc/self/clear_refs").exists():
        print("\nMemory: needs Linux's /proc/self/clear_refs; skipped")
        return
    print("\nMemory of one batch, default model: measured peak resident memory against the estimate")
    print(f"{'tokens':>7} {'batch':>6} {'backward':>9} {'measured MB':>12} {'estimate MB':>12} "
          f"{'estimate/measured':>18}")
    for backward in (True, False):
        for tokens, n in ((32, 50), (128, 1), (128, 4), (512, 1), (512, 4)):
            out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(tokens), str(n), str(int(backward))],
                                 capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
                                 env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
            if out.returncode != 0:
                print(f"{tokens:>7} {n:>6} {str(backward):>9}  failed: {out.stderr.strip().splitlines()[-1]}")
                continue
            measured, estimate = map(int, out.stdout.split())
            print(f"{tokens:>7} {n:>6} {str(backward):>9} {measured / 1e6:>12.1f} {estimate / 1e6:>12.1f} "
                  f"{estimate / max(measured, 1):>18.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2, the target's)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda; the memory section is CPU-only")
    parser.add_argument("--only", nargs="+", choices=("attribution", "ranking", "explain", "convergence", "memory"),
                        default=("attribution", "ranking", "explain", "convergence", "memory"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = 4 if args.quick else 10
    explorer = bertviz_app.load(device=args.device)
    n_tokens = len(explorer.encode(SENTENCE_32))
    if n_tokens != 32:
        raise SystemExit(f"the benchmark sentence has {n_tokens} tokens, not 32; adjust SENTENCE_32")
    where = torch.cuda.get_device_name(explorer.device) if explorer.device.type == "cuda" else cpu_model()
    print(f"bench_attribution: {explorer.name} on {explorer.device} ({where}), torch {torch.__version__}, "
          f"{args.threads} threads, {os.cpu_count()} CPUs, load average {load_average()}")
    print(f"example_bytes at 32 tokens with backward: {example_bytes(explorer.config, 32, True) / 1e6:.1f} MB")
    if "attribution" in args.only:
        bench_attribution(explorer, repeats)
    if "ranking" in args.only:
        bench_ranking(explorer, repeats)
    if "explain" in args.only:
        bench_explain(explorer)
    if "convergence" in args.only:
        bench_convergence(explorer)
    if "memory" in args.only and explorer.device.type == "cpu":
        bench_memory()
    print(f"\nload average at the end {load_average()}")


if __name__ == "__main__":
    main()
