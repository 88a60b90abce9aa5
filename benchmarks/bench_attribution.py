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
                 goes: its top prediction, integrated gradients' 50 steps, blank-out in runs of words, the pass with
                 attention, the 72 heads silenced, the figures, each in wall and CPU seconds and in passes of the input
                 (the progress bar's unit) against one batched pass of the input on one thread as the server runs it;
                 then the tab's explain_view on one thread, on one thread with a helper (the server now), on two
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


def explain_parts(explorer, run):
    """The tab's Explain cut into its parts, each a callable, in the order explain_view runs them (what each counts
    in passes of the whole input, as the tab's progress bar does)."""
    from bertviz_app import figures
    from bertviz_app.ablation import ablation_passes
    from bertviz_app.analysis.faithfulness import faithfulness_table
    from bertviz_app.app.tabs.beyond import EXPLAIN_BLANK_OUT_PASSES
    from bertviz_app.attribution import PASSES_PER_STEP, attention_measures, blank_out, blank_out_passes
    from bertviz_app.masked_lm import evaluating
    from bertviz_app.targets import forward_ids

    model, tokenizer, encoding = explorer.model, explorer.tokenizer, run.encoding
    made = {}

    def target():
        made["target"] = resolve_target(model, tokenizer, encoding)

    def ig():
        made["ig"] = attribute(model, tokenizer, encoding, target=made["target"])

    def blank():
        made["blank"] = blank_out(model, tokenizer, encoding, token=made["target"].token_id,
                                  max_passes=EXPLAIN_BLANK_OUT_PASSES)

    def measures():  # faithfulness(): its pass with attention captured, the measures and the Spearman table
        with evaluating(model), torch.inference_mode():
            out = forward_ids(model, encoding, capture=("layer.*.attention.probs", "layer.*.attention.value_grams"))
            att = torch.stack([a[0] for a in out.layers("attention.probs")]).float().numpy()
            grams = torch.stack([g[0] for g in out.layers("attention.value_grams")]).float().numpy()
        ig_ = made["ig"]
        made["table"] = faithfulness_table(attention_measures(att, grams, ig_.target.position),
                                           {"integrated gradients": abs(ig_.scores),
                                            "blank-out": abs(made["blank"].scores)}, ~ig_.fixed)

    def heads():
        made["ranking"] = rank_heads(model, tokenizer, encoding, token=made["target"].token_id)

    def payload():  # the three figures the tab sends
        ig_ = made["ig"]
        figures.attribution_figure(list(encoding.labels), {"integrated gradients": ig_.scores,
                                                           "blank-out": made["blank"].scores}, ig_.fixed, per_line=12)
        figures.faithfulness_figure(made["table"])
        figures.head_effects_figure(made["ranking"].effects, target="x")

    runs = blank_out_passes(tokenizer, encoding, EXPLAIN_BLANK_OUT_PASSES)
    return (("top prediction (one pass)", 1, target), ("integrated gradients, 50 steps", PASSES_PER_STEP * 50, ig),
            (f"blank-out, {runs} runs of words", runs + 1, blank),
            ("faithfulness: a pass with attention, Spearman", 1, measures),
            ("72 heads silenced in turn", ablation_passes(model.config) + 1, heads),
            ("payload: the three figures", 0, payload))


def explain_input(explorer, tokens: int):
    words = ("the cat sat on the mat near a warm fire and the dog slept " * 40).split()
    return explorer.run(" ".join(words[:tokens - 4]) + " [MASK] .")


def bench_explain(explorer, tokens: int = 256) -> None:
    """The tab's Explain at `tokens` tokens, part by part, against the peer: one batched forward pass of the same input
    on one torch thread (the server's), timed just before and just after each part (the load of a shared machine
    moves; the ratio to a pass timed beside it much less). Each part in wall time and in CPU time (the process's,
    helpers included: the work, which the load moves little), as the server runs it: one torch thread, a helper on
    the other core (spare_cores); then the whole tab's explain_view three ways."""
    from bertviz_app import spare_cores
    from bertviz_app.app.tabs.beyond import explain_view
    from bertviz_app.attribution import seconds_per_pass

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    run = explain_input(explorer, tokens)
    model, encoding = explorer.model, run.encoding

    def peer() -> tuple[float, float]:  # (wall, CPU) seconds of one pass of the input, batched by 4
        wall, cpu = time.perf_counter(), time.process_time()
        seconds_per_pass(model, encoding)
        return (time.perf_counter() - wall) / 4, (time.process_time() - cpu) / 4

    def timed(fn) -> tuple[float, float, float, float]:  # wall, CPU, and the peer's wall and CPU beside it
        before = peer()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        after = peer()
        return wall, cpu, (before[0] + after[0]) / 2, (before[1] + after[1]) / 2

    peer()  # warm-up
    print(f"\nExplain at {len(encoding)} tokens, 1 torch thread as the server runs it, {spare_cores.spare_cores()} "
          f"helper(s) on spare cores; load average {load_average()}")
    print(f"{'part':<46} {'passes':>7} {'wall s':>7} {'peer ms':>8} {'wall/peer':>10} {'CPU s':>6} {'CPU/peer':>9}")
    walls, cpus = 0.0, 0.0
    for name, passes, fn in explain_parts(explorer, run):
        wall, cpu, peer_wall, peer_cpu = timed(fn)
        walls, cpus = walls + wall / peer_wall, cpus + cpu / peer_cpu
        print(f"{name:<46} {passes:>7.0f} {wall:>7.2f} {1e3 * peer_wall:>8.0f} {wall / peer_wall:>10.1f} {cpu:>6.2f} "
              f"{cpu / peer_cpu:>9.1f}")
    print(f"{'the parts together':<46} {'':>7} {'':>7} {'':>8} {walls:>10.0f} {'':>6} {cpus:>9.0f}")
    ways = (("explain_view, 1 thread, no helper (before)", 1, 0),
            ("explain_view, 1 thread and a helper (now)", 1, None), ("explain_view, 2 torch threads", 2, 0))
    print(f"\n{'the tab, end to end':<46} {'wall s':>7} {'peer ms':>8} {'wall/peer':>10} {'CPU s':>6} {'CPU/peer':>9}")
    spare = spare_cores.spare_cores
    try:
        for name, n, helpers in ways:
            torch.set_num_threads(n)
            spare_cores.spare_cores = spare if helpers is None else (lambda h=helpers: h)
            torch.set_num_threads(1)
            peer_wall = peer()[0]
            torch.set_num_threads(n)
            wall, cpu, _, peer_cpu = timed(lambda: explain_view(explorer, run, "mask:0", "", 50))
            torch.set_num_threads(1)
            peer_wall = (peer_wall + peer()[0]) / 2
            print(f"{name:<46} {wall:>7.1f} {1e3 * peer_wall:>8.0f} {wall / peer_wall:>10.0f} {cpu:>6.1f} "
                  f"{cpu / peer_cpu:>9.0f}")
    finally:
        spare_cores.spare_cores = spare
        torch.set_num_threads(threads)
    print(f"target: <= 15 s on 2 idle cores; load average now {load_average()}")


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
