"""A wheel carries what a user of `pip install` needs: the code, the examples and the shipped default model."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_the_assets(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("bertviz_app-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"bertviz_app/assets/{p.relative_to(ROOT / 'assets').as_posix()}"
                for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assert "bertviz_app/assets/minilm-l6-mlm-nsp-en/model.safetensors" in expected
    assert expected <= names, sorted(expected - names)
    assert {"bertviz_app/__init__.py", "bertviz_app/analysis/attention.py", "bertviz_app/py.typed"} <= names
