"""The heads' vocabulary has one home, bertviz_app/heads.py: its JavaScript twin is generated from it and current,
node reads the same definitions, the default model's run is the fixture the node tests classify, and no other file
of the package writes the role rule, its thresholds or its labels again."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bertviz_app import heads, i18n

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bertviz_app"
_spec = importlib.util.spec_from_file_location("make_heads_fixture", ROOT / "tests" / "js" / "make_heads_fixture.py")
make_heads_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_heads_fixture)


def test_the_js_module_is_generated_from_heads_py():
    assert heads.JS_MODULE.read_text(encoding="utf-8") == heads.js_module(), "run python -m bertviz_app.heads"


def test_node_reads_the_same_definitions():
    probe = f'import("{heads.JS_MODULE.as_uri()}").then((m) => console.log(JSON.stringify(m.HEADS)));'
    out = subprocess.run(["node", "--input-type=module", "-e", probe], capture_output=True, text=True, check=True)
    ours = json.loads(out.stdout)
    assert ours["shares"] == heads.SHARES and ours["roleColors"] == heads.ROLE_COLORS
    assert (ours["dominantShare"], ours["broadEntropy"]) == (heads.DOMINANT_SHARE, heads.BROAD_ENTROPY)
    assert ours["statistics"] == list(heads.HEAD_STATISTICS) and ours["clearRoles"] == list(heads.CLEAR_ROLES)


@pytest.mark.real_weights
def test_the_node_fixture_is_the_default_models_run_today():
    stored = json.loads(make_heads_fixture.FIXTURE.read_text(encoding="utf-8"))
    now = make_heads_fixture.contents()
    assert stored["tokens"] == now["tokens"] and stored["special"] == now["special"]
    shape = (now["layers"], now["heads"], len(now["tokens"]), len(now["tokens"]))
    attention = [np.frombuffer(base64.b64decode(d["attention"]), "<f4").reshape(shape)
                 for d in (stored, now)]
    np.testing.assert_allclose(*attention, atol=1e-5, err_msg="run python tests/js/make_heads_fixture.py")
    assert stored["roles"] == now["roles"]


def test_the_rule_edges():
    zeros = {name: 0.0 for name in heads.SHARES}
    assert heads.role_of({**zeros, "sep": heads.DOMINANT_SHARE}, 0.0) == "[SEP]"
    assert heads.role_of({**zeros, "self": 0.5, "next": 0.5}, 0.0) == "self"  # a tie: the first of SHARES
    assert heads.role_of({**zeros, "previous": 0.49}, heads.BROAD_ENTROPY) == "broad"
    assert heads.role_of({**zeros, "previous": 0.49}, 0.74) == "mixed"
    shares = {**zeros, "cls": np.nan, "punctuation": 0.6}  # a corpus without [CLS] statistics
    assert heads.role_of(shares, np.nan, heads.CORPUS_SHARES) == "punctuation"
    assert heads.role_of({**zeros, "punctuation": 0.0, "cls": np.nan}, np.nan, heads.CORPUS_SHARES) == "mixed"
    grid = heads.roles({name: np.full((2, 3), 0.1) for name in heads.SHARES}, np.full((2, 3), 0.9))
    assert grid.shape == (2, 3) and set(grid.ravel()) == {"broad"}


# What writing the rule (or its vocabulary) again looks like, in Python or JavaScript.
AGAIN = {"the thresholds": re.compile(r"\b(?:DOMINANT_SHARE|BROAD_ENTROPY|dominantShare|broadEntropy)\b"),
         "the fallback to broad or mixed": re.compile(r"""["']broad["']\s*(?:if|:)[^\n]*["']mixed["']"""),
         "a map of role labels": re.compile(r"""["']previous token["']\s*:"""),
         "a list of the clear roles": re.compile(r"""["']previous token["'],\s*["']next token["']""")}
JS_RULE = PACKAGE / "static" / "js" / "views-data.mjs"  # roleOf: the rule in JavaScript, over heads.mjs' constants


def offenders(files) -> list[str]:
    return [f"{path.relative_to(ROOT)}: {what}" for path in files for what, pattern in AGAIN.items()
            if pattern.search(path.read_text(encoding="utf-8"))]


def test_no_other_file_writes_the_rule_again():
    homes = {PACKAGE / "heads.py", heads.JS_MODULE}
    # a translation catalogue is keyed by the English labels ("previous token": its Spanish), not a map of roles
    catalogues = set(i18n.CATALOGUE_FILES.values())
    files = [p for p in sorted(PACKAGE.rglob("*"))
             if p.suffix in (".py", ".mjs") and p not in homes | catalogues | {JS_RULE}]
    assert len(files) > 100
    assert not offenders(files)
    assert offenders([JS_RULE]) == [f"{JS_RULE.relative_to(ROOT)}: the thresholds"]
    rule = JS_RULE.read_text(encoding="utf-8")
    assert rule.count("HEADS.dominantShare") == rule.count("HEADS.broadEntropy") == 1  # in roleOf, nowhere else
    assert len(offenders(homes)) >= 4  # the patterns do find the rule where it lives
