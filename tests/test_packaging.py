"""A wheel carries what a user of `pip install` needs: the code, the examples and the shipped default model, and an
installed wheel finds that model inside the package."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_the_assets_and_finds_them_installed(tmp_path):
    # Build from a copy of the tracked files, so that the build leaves nothing (build/, *.egg-info) in the checkout
    # and cannot pick up untracked files from it.
    source = tmp_path / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(tmp_path), str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("bertviz_app-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"bertviz_app/assets/{p.relative_to(ROOT / 'assets').as_posix()}"
                for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assert "bertviz_app/assets/minilm-l6-mlm-nsp-en/model.safetensors" in expected
    assert expected <= names, sorted(expected - names)
    # every module of the checkout, whatever subpackage it is in (a package missing from pyproject's list is not)
    modules = {f"bertviz_app/{p.relative_to(ROOT / 'bertviz_app').as_posix()}"
               for p in (ROOT / "bertviz_app").rglob("*.py") if "__pycache__" not in p.parts}
    assert {"bertviz_app/model/bert.py", "bertviz_app/tokenizer/family.py", "bertviz_app/app/tabs/base.py"} <= modules
    assert modules | {"bertviz_app/py.typed"} <= names, sorted(modules - names)
    # the page's own scripts, HTML and CSS (package data, which pyproject lists by pattern)
    page = {name for name in filter(None, tracked.decode().split("\0"))
            if name.startswith("bertviz_app/") and name.endswith((".js", ".mjs", ".html", ".css"))}
    assert {"bertviz_app/app/page/fit-on-a-phone.js", "bertviz_app/static/index.html", "bertviz_app/styles/page.css",
            "bertviz_app/views/js/main.mjs"} <= page
    assert page <= names, sorted(page - names)

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    probe = ("from bertviz_app import catalog; print(catalog.__file__); print(catalog.ASSETS); "
             "print(catalog.builtin_models()[catalog.ENGLISH_MLM_NAME])")
    # The checkout is not importable from tmp_path: only the installed copy is.
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                         text=True).stdout.splitlines()
    package = site / "bertviz_app"
    assert out == [str(package / "catalog.py"), str(package / "assets"),
                   str(package / "assets" / "minilm-l6-mlm-nsp-en")]
