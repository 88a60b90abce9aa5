"""Every script in examples/ runs to the end with the public API (in a subprocess, writing only to tmp_path)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.real_weights
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    result = subprocess.run([sys.executable, str(script), *(["--out", str(tmp_path / "out")]
                             if "--out" in script.read_text() else [])],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()
    if "--out" in script.read_text():
        assert list((tmp_path / "out").glob("*.html")) and (tmp_path / "out" / "attention.csv").exists()
