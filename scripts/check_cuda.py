#!/usr/bin/env python3
"""Check bertviz-app on a CUDA GPU: the same inputs through the model on the GPU and on the CPU, and through
transformers on the GPU, must agree within float32 tolerances; attributions, head rankings and silenced heads must
give the same answers on both devices; every figure and the views' payloads must build from a GPU run. (The app on
cuda is checked by serving it: `python -m bertviz_app --device cuda`.)

Not a test (CI has no GPU, and a test may not skip itself there): run it by hand on a machine with one.

    python scripts/check_cuda.py [--model NAME_OR_PATH]

Prints one line per check and exits non-zero at the first disagreement.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bertviz_app  # noqa: E402
import bertviz_app.views  # noqa: E402

INPUTS = [
    ("The capital of France is [MASK].", None),
    ("She poured a cup of [MASK].", "It was still hot."),
    ("Emoji 🙂 and 漢字 and <b>tags</b>\tand a tab.", None),
    (" ".join(["the river bank was quiet when the old man sat down"] * 60), None),  # truncated at 512 tokens
]
# float32 on both devices, but different kernels (cuBLAS with TF32 off vs. MKL/OpenBLAS): differences are rounding.
ATOL, RTOL = 2e-4, 2e-4


def check_runs(gpu, cpu) -> None:
    for text, pair in INPUTS:
        on_gpu, on_cpu = gpu.run(text, pair), cpu.run(text, pair)
        if on_gpu.tokens != on_cpu.tokens:
            raise SystemExit(f"tokens differ between cuda and cpu on {text[:40]!r}")
        for field in ("hidden_states", "attentions", "queries", "keys", "token_embeddings", "position_embeddings",
                      "value_grams"):
            np.testing.assert_allclose(getattr(on_gpu, field), getattr(on_cpu, field), atol=ATOL, rtol=RTOL,
                                       err_msg=field)
        worst = float(np.abs(on_gpu.hidden_states - on_cpu.hidden_states).max())
        print(f"cuda == cpu on {len(on_gpu)} tokens (largest hidden-state difference {worst:.1e}): {text[:40]!r}")


def check_transformers(gpu, device, folder) -> None:
    import transformers
    hf = transformers.BertForPreTraining.from_pretrained(folder, dtype=torch.float32,
                                                         attn_implementation="eager").to(device).eval()
    for text, pair in INPUTS:
        enc = gpu.tokenizer.encode(text, pair, max_tokens=gpu.max_tokens)
        ids = torch.tensor([enc.ids], device=device)
        types = torch.tensor([enc.segment_ids], device=device)
        with torch.inference_mode():
            theirs = hf(input_ids=ids, token_type_ids=types, output_attentions=True)
            mine = gpu.model(ids, types, capture={"layer.*.attention.probs"})
        torch.testing.assert_close(mine.prediction_logits, theirs.prediction_logits, atol=1e-3, rtol=1e-3)
        torch.testing.assert_close(mine.seq_relationship_logits, theirs.seq_relationship_logits, atol=1e-4,
                                   rtol=1e-4)
        for a, b in zip(mine.layers("attention.probs"), theirs.attentions, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    print(f"ours == transformers {transformers.__version__} on cuda (prediction logits within 1e-3, NSP logits "
          "1e-4, attentions 1e-5)")


def check_heads(gpu, cpu) -> None:
    for text, pair in INPUTS[:2]:
        top_gpu = [t for t, _ in gpu.fill_mask(text, pair, top_k=5)[0]]
        top_cpu = [t for t, _ in cpu.fill_mask(text, pair, top_k=5)[0]]
        if top_gpu != top_cpu:
            raise SystemExit(f"fill-mask differs on {text!r}: cuda {top_gpu}, cpu {top_cpu}")
        print(f"fill-mask on cuda == cpu: {text!r} -> {', '.join(top_gpu)}")
    lens = gpu.logit_lens(INPUTS[0][0])
    print(f"logit lens on cuda: {len(lens.layers)} layers, final answer {lens.final_token!r}")
    print(f"next sentence on cuda: P(is next) = {gpu.next_sentence('It rained all day.', 'The streets were wet.'):.3f}")


def check_beyond(gpu, cpu) -> None:
    """Integrated gradients, blank-out, silencing and ranking heads: the same answers on both devices."""
    text, pair = "The keys to the cabinet [MASK] on the table.", "They were lost yesterday."
    timings = {}
    for name, explorer in (("cuda", gpu), ("cpu", cpu)):
        start = time.perf_counter()
        ig = explorer.attribute(text, pair)
        timings[name] = (time.perf_counter() - start, ig)
    (t_gpu, ig_gpu), (t_cpu, ig_cpu) = timings["cuda"], timings["cpu"]
    if ig_gpu.relative_delta > 0.05:
        raise SystemExit(f"integrated gradients on cuda: delta {ig_gpu.relative_delta:.2e} of |f(x) - f(x')|")
    np.testing.assert_allclose(ig_gpu.scores, ig_cpu.scores, atol=1e-3, rtol=1e-2, err_msg="attribution")
    print(f"integrated gradients on cuda == cpu (50 steps: {1000 * t_gpu:.0f} ms on cuda, {1000 * t_cpu:.0f} ms on "
          f"cpu; delta {ig_gpu.relative_delta:.1e} of the change it explains)")
    np.testing.assert_allclose(gpu.blank_out(text, pair).scores, cpu.blank_out(text, pair).scores, atol=1e-3,
                               rtol=1e-2, err_msg="blank-out")
    start = time.perf_counter()
    ranking = gpu.rank_heads(text, pair)
    t_rank = time.perf_counter() - start
    np.testing.assert_allclose(ranking.effects, cpu.rank_heads(text, pair).effects, atol=1e-3, rtol=1e-2,
                               err_msg="head ranking")
    silenced = gpu.ablate(text, ranking.top(5), pair)
    if [m.after[0][0] for m in silenced.masks] != [m.after[0][0] for m in cpu.ablate(text, ranking.top(5),
                                                                                    pair).masks]:
        raise SystemExit("silencing the top heads gives different predictions on cuda and cpu")
    panel = gpu.faithfulness(text, pair)
    print(f"head ranking on cuda == cpu (72 heads in {1000 * t_rank:.0f} ms on cuda); silencing {ranking.top(5)}: "
          f"P({silenced.masks[0].token}) {silenced.masks[0].probability_before:.3f} -> "
          f"{silenced.masks[0].probability_after:.3f}; faithfulness table {panel.table.shape}")


def check_views(gpu, device) -> None:
    """Every figure and both views payloads, built from a GPU run."""
    run = gpu.run(*INPUTS[1])
    start = time.perf_counter()
    plot = run.plot
    figures = [plot.attention(2, 3), plot.attention(2, None, segments="A->B"), plot.rollout(2),
               plot.token_attention(2, 1), plot.query_key(2, 3, 1), plot.head_overview(), plot.head_map(),
               plot.embedding_parts(), plot.segment_comparison(), plot.position_similarity(),
               plot.position_path(), plot.hidden_norms(), plot.layer_similarity(), plot.token_similarity(),
               plot.hidden_projection()]
    json_bytes = sum(len(f.to_json()) for f in figures)
    payload, qk = run.views_payload(), run.query_key_payload()
    decoded = bertviz_app.views.decode_payload(payload)
    if decoded.header["tokens"] != run.tokens or "value_weighted" not in decoded.header["matrix_sets"]:
        raise SystemExit("the views payload of a cuda run does not describe it")
    page = run.title
    print(f"{len(figures)} figures and the views payloads ({len(payload) / 1000:.0f} kB + {len(qk) / 1000:.0f} kB "
          f"query/key) from a cuda run in {1000 * (time.perf_counter() - start):.0f} ms ({json_bytes / 1e6:.1f} MB "
          f"of figure JSON); {page!r}")
    if device.type == "cuda":
        print(f"peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="built-in name or checkpoint folder (default: the default model)")
    p.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: a smoke run of this script itself
    args = p.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU is visible here (torch.cuda.is_available() is False)")
        torch.backends.cuda.matmul.allow_tf32 = False  # compare float32 with float32
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name(device)}")
    gpu = bertviz_app.load(args.model, device=device, max_tokens=512)
    cpu = bertviz_app.load(args.model, device="cpu", max_tokens=512)
    print(f"loaded {gpu!r} in {gpu.load_seconds:.1f} s")
    first = time.perf_counter()
    gpu.run("The first input after loading.")
    print(f"first input after loading: {1000 * (time.perf_counter() - first):.0f} ms")
    check_runs(gpu, cpu)
    if gpu.has_mlm_head:
        check_transformers(gpu, device, bertviz_app.catalog.builtin_models().get(gpu.name) or Path(args.model))
        check_heads(gpu, cpu)
        check_beyond(gpu, cpu)
    check_views(gpu, device)
    print("all CUDA checks passed")


if __name__ == "__main__":
    main()
