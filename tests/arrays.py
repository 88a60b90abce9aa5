"""Arrays shaped like a model's, for the tests of the analyses (test_words.py, test_compare.py)."""

import numpy as np


def random_attention(*shape, seed=0) -> np.ndarray:
    """(..., T, T) rows of a softmax, float32."""
    logits = np.random.default_rng(seed).normal(size=shape) * 2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)
