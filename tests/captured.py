"""What the tests capture from our model's named points (model/points.py), and the two stacks transformers' outputs
have (hidden_states, attentions), rebuilt from those names for comparison."""

STATES = ("embeddings", "layer.*.output")
ATTENTION = ("layer.*.attention.probs",)
BOTH = STATES + ATTENTION


def hidden_states(out) -> tuple:
    """The embeddings, then every layer's output: transformers' hidden_states."""
    return (out.captured["embeddings"], *out.layers("output"))


def attentions(out) -> tuple:
    return out.layers("attention.probs")
