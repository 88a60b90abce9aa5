"""The plotly figures' categorical colours (a method's curve, a part of an embedding, a reference's bars, the masked
token's bar) stay apart in normal vision and under protanopia, deuteranopia and tritanopia: the same measure and
threshold as the views' colour-blind palette (tests/js/colour.mjs, palette.mjs's MIN_DELTA_E), run by node on the
colours as the figure modules hold them, white (the plot's paper) among them. The figures have no palette switch (a
notebook shows them too), so their one set must pass. Series that also differ by a dash or a marker say so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bertviz_app.figures import beyond, embeddings, masked_lm

ROOT = Path(__file__).resolve().parents[1]
MEASURE = f"""
import {{ closest }} from "{(ROOT / 'tests' / 'js' / 'colour.mjs').as_uri()}";
import {{ MIN_DELTA_E }} from "{(ROOT / 'bertviz_app' / 'views' / 'js' / 'palette.mjs').as_uri()}";
const sets = JSON.parse(process.argv[1]);
console.log(JSON.stringify({{ min: MIN_DELTA_E, worst: Object.fromEntries(Object.entries(sets).map(([k, s]) =>
  [k, closest(["#ffffff", ...s])])) }}));
"""

SETS = {
    "faithfulness curves": list(beyond.CURVE_COLORS.values()),
    "faithfulness references": list(beyond.REFERENCE_COLORS.values()),
    "embedding parts": list(embeddings.EMBEDDING_COLORS.values()),
    "masked token": [masked_lm.PREDICTION_COLOR, masked_lm.ORIGINAL_COLOR],
}


@pytest.fixture(scope="module")
def measured():
    out = subprocess.run(["node", "--input-type=module", "-e", MEASURE, json.dumps(SETS)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", list(SETS))
def test_every_pair_stays_apart_in_four_visions(measured, name):
    worst = measured["worst"][name]
    assert worst["d"] >= measured["min"], f"{name}: {worst}"


def test_the_curves_differ_by_marker_too_and_the_prediction_measures_by_dash():
    import numpy as np
    import pandas as pd

    names = list(beyond.CURVE_COLORS)
    curves = {n: np.linspace(1, 0, 4) for n in names}
    aopc = pd.DataFrame({"deletion": 0.1, "insertion": 0.2}, index=names)
    fig = beyond.faithfulness_curves_figure(curves, curves, aopc)
    shown = [t for t in fig.data if t.showlegend is not False]
    assert len({t.marker.symbol for t in shown}) == len(names)
    dashed = {t.legendgroup for t in shown if t.line.dash == "dash"}
    assert dashed == {"integrated gradients", "blank-out"}
