"""The fixture that shows the JavaScript names the heads of the default model as Python does: one input through the
shipped model, its attention (float32) and every head's role by bertviz_app.heads.

    python tests/js/make_heads_fixture.py   # rewrites tests/js/fixtures/default-heads.json (tests/test_heads.py
                                            # checks that it is today's run; tests/js/heads.test.mjs reads it)
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "default-heads.json"
TEXT, PAIR = "The cat sat on the mat because it was warm.", "Then the dog came in."


def contents() -> dict:
    import bertviz_app

    run = bertviz_app.load(device="cpu").run(TEXT, PAIR)
    attention = np.ascontiguousarray(run.attentions, dtype="<f4")  # (L, h, T, T)
    return {"model": run.model_name, "text": TEXT, "text_pair": PAIR, "tokens": list(run.tokens),
            "special": run.special_mask.astype(int).tolist(), "layers": int(attention.shape[0]),
            "heads": int(attention.shape[1]), "attention": base64.b64encode(attention.tobytes()).decode("ascii"),
            "roles": run.head_statistics().dominant.tolist()}


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(contents(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
