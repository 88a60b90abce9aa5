"""How fast, and with how much memory, `load_model` refuses a config.json that describes a far bigger model than its
weights: 100,000 layers, hidden_size 10**7, 1000 or 256 BERT-Base-sized layers, each next to the weights of a tiny
BERT.

Each case runs in a fresh process (so its peak RSS is its own) under an address-space limit (--limit-gb), so that a
loader that tries to allocate the whole model fails inside the limit instead of taking the machine's memory from its
neighbours.

    .venv/bin/python benchmarks/bench_bad_config.py
    .venv/bin/python benchmarks/bench_bad_config.py --limit-gb 6 --timeout 120
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "num_hidden_layers=100000": dict(num_hidden_layers=100_000),
    "hidden_size=10**7": dict(hidden_size=10**7),
    "1000 base-sized layers": dict(num_hidden_layers=1000, hidden_size=768, num_attention_heads=12,
                                   intermediate_size=3072),
    # Within every limit (1.8 billion parameters), so only the comparison with the weights' shapes can refuse it.
    "256 base-sized layers": dict(num_hidden_layers=256, hidden_size=768, num_attention_heads=12,
                                  intermediate_size=3072),
}

CHILD = r"""
import json, resource, sys, time
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from bertviz_app.checkpoint import load_model
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    load_model(sys.argv[1])
    outcome = "loaded"
except BaseException as err:  # keep only words: the traceback would keep the half-built model alive
    outcome = type(err).__name__ + ": " + (str(err).splitlines() or [""])[0][:150]
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(dict(seconds=seconds, base_mb=base / 1024, peak_mb=peak / 1024, outcome=outcome)))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-gb", type=float, default=8.0, help="address-space limit of each case")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a case counts as hung")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bertviz_app import BertConfig
    from bertviz_app.checkpoint import save_pretrained
    from bertviz_app.model import BertForPreTraining

    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp, "tiny")
        save_pretrained(BertForPreTraining(BertConfig.preset("tiny")), good)
        config = json.loads((good / "config.json").read_text())
        print(f"address-space limit {args.limit_gb:g} GB, timeout {args.timeout:g} s\n")
        print("| config.json | seconds to fail | peak RSS (MB, after imports) | outcome |")
        print("|---|---|---|---|")
        for name, change in CASES.items():
            folder = Path(tmp, name.replace(" ", "_").replace("*", ""))
            folder.mkdir()
            (folder / "model.safetensors").symlink_to(good / "model.safetensors")
            (folder / "config.json").write_text(json.dumps({**config, **change}))
            start = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), str(int(args.limit_gb * 2**30))],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
            try:
                out, err = child.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                print(f"| {name} | > {args.timeout:g} | - | still running, killed |")
                continue
            wall = time.perf_counter() - start
            # The largest peak of the children so far, from the kernel: there even when the child died of its
            # MemoryError (cases that die come first in CASES, so the figure is their own).
            peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            lines = out.strip().splitlines()
            if not lines:
                last = err.strip().splitlines()[-1] if err.strip() else ""
                print(f"| {name} | {wall:.1f} (whole process) | {peak_mb:.0f} | died (rc {child.returncode}): "
                      f"{last[:150]} |")
                continue
            r = json.loads(lines[-1])
            print(f"| {name} | {r['seconds']:.4f} | {r['peak_mb']:.0f} ({r['base_mb']:.0f}) | {r['outcome']} |")


if __name__ == "__main__":
    main()
