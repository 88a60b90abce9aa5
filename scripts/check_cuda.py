#!/usr/bin/env python3
"""Check bertviz-app on a CUDA GPU: the same inputs through the model on the GPU and on the CPU, and through
transformers on the GPU, must agree within float32 tolerances; every view must build from a GPU run.

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
from bertviz_app import app  # noqa: E402

INPUTS = [
    ("The capital of France is [MASK].", None),
    ("She poured a cup of [MASK].", "It was still hot."),
    ("Emoji 🙂 and 漢字 and <b>tags</b>\tand a tab.", None),
    (" ".join(["the river bank was quiet when the old man sat down"] * 60), None),  # truncated at 512 tokens
]
# float32 on both devices, but different kernels (cuBLAS with TF32 off vs. MKL/OpenBLAS): differences are rounding.
ATOL, RTOL = 2e-4, 2e-4


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
    gpu = bertviz_app.load(args.model, device=device)
    cpu = bertviz_app.load(args.model, device="cpu")
    print(f"loaded {gpu!r} in {gpu.load_seconds:.1f} s")
    first = time.perf_counter()
    gpu.run("The first input after loading.")
    print(f"first input after loading: {1000 * (time.perf_counter() - first):.0f} ms")

    for text, pair in INPUTS:
        on_gpu, on_cpu = gpu.run(text, pair), cpu.run(text, pair)
        if on_gpu.tokens != on_cpu.tokens:
            raise SystemExit(f"tokens differ between cuda and cpu on {text[:40]!r}")
        for field in ("hidden_states", "attentions", "queries", "keys", "token_embeddings", "position_embeddings"):
            np.testing.assert_allclose(getattr(on_gpu, field), getattr(on_cpu, field), atol=ATOL, rtol=RTOL,
                                       err_msg=field)
        worst = float(np.abs(on_gpu.hidden_states - on_cpu.hidden_states).max())
        print(f"cuda == cpu on {len(on_gpu)} tokens (largest hidden-state difference {worst:.1e}): {text[:40]!r}")

    import transformers
    folder = bertviz_app.catalog.builtin_models().get(gpu.name) or Path(args.model)
    if gpu.has_mlm_head:
        hf = transformers.BertForPreTraining.from_pretrained(folder, dtype=torch.float32,
                                                             attn_implementation="eager").to(device).eval()
        for text, pair in INPUTS:
            enc = gpu.tokenizer.encode(text, pair, max_tokens=gpu.max_tokens)
            ids = torch.tensor([enc.ids], device=device)
            types = torch.tensor([enc.segment_ids], device=device)
            with torch.inference_mode():
                theirs = hf(input_ids=ids, token_type_ids=types, output_attentions=True)
                mine = gpu.model(ids, types, output_attentions=True)
            torch.testing.assert_close(mine.prediction_logits, theirs.prediction_logits, atol=1e-3, rtol=1e-3)
            torch.testing.assert_close(mine.seq_relationship_logits, theirs.seq_relationship_logits, atol=1e-4,
                                       rtol=1e-4)
            for a, b in zip(mine.attentions, theirs.attentions):
                torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
        print(f"ours == transformers {transformers.__version__} on cuda (prediction logits within 1e-3, NSP logits "
              "1e-4, attentions 1e-5)")

    if gpu.has_mlm_head:
        for text, pair in INPUTS[:2]:
            top_gpu = [t for t, _ in gpu.fill_mask(text, pair, top_k=5)[0]]
            top_cpu = [t for t, _ in cpu.fill_mask(text, pair, top_k=5)[0]]
            if top_gpu != top_cpu:
                raise SystemExit(f"fill-mask differs on {text!r}: cuda {top_gpu}, cpu {top_cpu}")
            print(f"fill-mask on cuda == cpu: {text!r} -> {', '.join(top_gpu)}")
        lens = gpu.logit_lens(INPUTS[0][0])
        print(f"logit lens on cuda: {len(lens.layers)} layers, final answer {lens.final_token!r}")
        print(f"next sentence on cuda: P(is next) = {gpu.next_sentence('It rained all day.', 'The streets were wet.'):.3f}")

    # Every view of every tab, built from a GPU run, the way the app's events build them.
    run = gpu.run(*INPUTS[1])
    start = time.perf_counter()
    figures = [app.heatmap_view(run, 2, 3, "all", False), *app.attention_detail_views(run, 2, 3, "all", False, 1),
               *app.overview_views(run), *app.embedding_views(run), *app.hidden_views(run, run.num_layers),
               app.corruption_view(gpu, run, 0)[2]]
    if gpu.has_mlm_head:
        figures += [app.fill_mask_view(gpu, INPUTS[1][0], 10)[2], app.logit_lens_view(gpu, INPUTS[1][0], 1)[2],
                    app.masked_token_view(gpu, run, 2, 10)[2]]
    app.next_sentence_view(gpu, run)
    payload = sum(len(f.to_json()) for f in figures)
    print(f"{len(figures)} views from a cuda run in {1000 * (time.perf_counter() - start):.0f} ms "
          f"({payload / 1e6:.1f} MB of figure JSON)")
    if device.type == "cuda":
        print(f"peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB")
    print("all CUDA checks passed")


if __name__ == "__main__":
    main()
