import numpy as np
import pytest

import bertviz_app


@pytest.mark.real_weights
def test_default_model_runs_a_pair():
    explorer = bertviz_app.load(device="cpu")
    run = explorer.run("The cat sat on the mat.", "It was tired.")
    assert run.tokens[0] == "[CLS]" and run.tokens.count("[SEP]") == 2
    assert run.attentions.shape == (6, 12, len(run), len(run))
    np.testing.assert_allclose(run.attentions.astype(np.float64).sum(-1), 1.0, atol=1e-6)  # float32 weights
    assert explorer.run("The cat sat on the mat.", "It was tired.") is run  # cached
