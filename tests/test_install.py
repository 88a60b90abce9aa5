"""The package as someone installs it, away from the repository: `python -m build` gives an sdist and a wheel that
hold the shipped model and the page runtime; the wheel, installed into a fresh virtual environment, runs
`bertviz-app` (--version, the notebook API, finetune, export-space; export-static's runtime is found installed); and
the Space that installed package exports runs from a fresh environment made from the Space's folder alone.

The Pretrain tab's first Start with its defaults, in a browser, on the installed wheel of a machine without Debian's
fortunes (what `make app` gives a new user: the app and nothing from Debian): it trains.

Fresh environments without a download: each is a new venv (`--without-pip`) whose only link to the test's
environment is one .pth line naming a folder of links to that environment's installed distributions, less
bertviz-app itself (its editable install would otherwise point back at the checkout). pip then installs into it with
`--no-index`: our wheel (its requirements found already installed, so they are checked, not fetched), or the
Space's requirements.txt. Every command runs outside the checkout, without PYTHONPATH, so only the wheel's files (or
the Space's) can be what runs, and a check before each install shows that the fresh environment has no bertviz_app.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import gradio
import httpx
import numpy as np
import pytest
import yaml
from gradio_client import Client

import bertviz_app
from bertviz_app import app, load
from bertviz_app.static import runtime
from pages import TIMEOUT_MS, AppPage, shoot

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
VERSION = bertviz_app.__version__
# One thread per process: several PyTorch processes on two shared cores, each with a thread per core, spin against
# each other (the notebook probe took 9.5 s of CPU instead of 2.3).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "OMP_NUM_THREADS": "1"}
TEXT = "The cat sat on the mat."


def run(*argv, cwd: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env={**ENV, **kwargs.pop("env", {})},
                            capture_output=True, text=True, timeout=300, **kwargs)
    if check and result.returncode != 0:
        pytest.fail(f"{argv} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def fresh_venv(folder: Path) -> Path:
    """A new venv that sees the test environment's installed distributions except bertviz-app; its python."""
    run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent)
    python = folder / "bin" / "python"
    links = folder / "linked-site-packages"
    links.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("bertviz_app", "__editable__")):
            (links / entry.name).symlink_to(entry)
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=folder).stdout.strip())
    (site / "linked.pth").write_text(f"{links}\n")
    # nothing of ours is there yet: whatever imports bertviz_app later finds the installed wheel or the Space's copy
    assert "No module named 'bertviz_app'" in run(python, "-c", "import bertviz_app", cwd=folder, check=False).stderr
    return python


def pip_install(python: Path, *args, cwd: Path) -> None:
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--disable-pip-version-check",
        "-q", *args, cwd=cwd)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """`python -m build` on a copy of the tracked files plus the fetched runtime (git ignores it; `make setup` puts it
    in the package), so the checkout gets no build/ or egg-info. build makes the sdist, then the wheel from it."""
    try:
        fetched = runtime.runtime_dir()
    except runtime.RuntimeMissing as err:
        pytest.fail(str(err))
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    shutil.copytree(fetched, source / "bertviz_app" / "static" / "runtime")
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", tmp / "dist", source, cwd=tmp)
    return tmp / "dist"


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; its bin/ folder."""
    python = fresh_venv(tmp_path_factory.mktemp("wheel-env") / "venv")
    (wheel,) = dist.glob("bertviz_app-*.whl")
    pip_install(python, wheel, cwd=dist)
    return python.parent


def test_the_sdist_and_the_wheel_hold_the_model_and_the_runtime(dist):
    (sdist,) = dist.glob("bertviz_app-*.tar.gz")
    (wheel,) = dist.glob("bertviz_app-*.whl")
    assert sdist.name == f"bertviz_app-{VERSION}.tar.gz" and wheel.name == f"bertviz_app-{VERSION}-py3-none-any.whl"
    model = "minilm-l6-mlm-nsp-en/model.safetensors"
    ours = {f"runtime/{f}" for f in (*runtime.FILES, "LICENSE", "VERSION")}
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    top = f"bertviz_app-{VERSION}"
    assert {f"{top}/assets/{model}", f"{top}/pyproject.toml", f"{top}/README.md"} <= names
    assert {f"{top}/bertviz_app/static/{f}" for f in ours} <= names
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"bertviz_app-{VERSION}.dist-info/METADATA").decode()
        entry_points = archive.read(f"bertviz_app-{VERSION}.dist-info/entry_points.txt").decode()
    assert {f"bertviz_app/assets/{model}", *(f"bertviz_app/static/{f}" for f in ours)} <= names
    # the version has one home: __version__, which pyproject.toml names instead of repeating
    assert f"\nVersion: {VERSION}\n" in metadata
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert "bertviz-app = bertviz_app.cli:main" in entry_points


def test_the_wheel_runs_without_the_repository(installed, tmp_path, tiny_mlm_folder):
    # the entry point pip wrote, from a folder that is not the checkout
    assert run(installed / "bertviz-app", "--version", cwd=tmp_path).stdout == f"bertviz-app {VERSION}\n"
    probe = ("import bertviz_app, numpy; from bertviz_app.static import runtime; print(bertviz_app.__file__); "
             "print(runtime.runtime_dir()); run = bertviz_app.load(device='cpu').run(" + repr(TEXT) + "); "
             "print(' '.join(run.tokens)); numpy.save('attention.npy', run.attentions)")
    out = run(installed / "python", "-c", probe, cwd=tmp_path).stdout.splitlines()
    site = Path(run(installed / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=tmp_path).stdout.strip())
    assert out[:2] == [str(site / "bertviz_app" / "__init__.py"), str(site / "bertviz_app" / "static" / "runtime")]
    # the shipped model inside the wheel gives the checkout's numbers (up to the order of a sum on another thread count)
    here = load(device="cpu").run(TEXT)
    assert out[2] == " ".join(here.tokens)
    np.testing.assert_allclose(np.load(tmp_path / "attention.npy"), here.attentions, rtol=0, atol=1e-5)

    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in
                                             [("a fine film", "pos"), ("a dull film", "neg")] * 4))
    run(installed / "bertviz-app", "finetune", "text-classification", "--train", data, "--validation", data,
        "--output", tmp_path / "tuned", "--model", tiny_mlm_folder, "--epochs", "1", "--batch-size", "4",
        "--device", "cpu", cwd=tmp_path)
    assert (tmp_path / "tuned" / "model.safetensors").is_file() and (tmp_path / "tuned" / "metrics.json").is_file()
    # export-static is not run here (its ONNX export costs 7 s of CPU; tests/test_static.py runs it): what it needs
    # of an installation beyond the code is the runtime, found inside the installed package above


def test_the_exported_space_runs_from_a_fresh_environment_of_its_folder(installed, tmp_path):
    space = tmp_path / "space"
    run(installed / "bertviz-app", "export-space", space, cwd=tmp_path)
    front = yaml.safe_load((space / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    assert (front["sdk"], front["sdk_version"], front["app_file"]) == ("gradio", gradio.__version__, "app.py")
    assert not (space / "bertviz_app" / "static" / "runtime").exists()  # a server never reads it

    python = fresh_venv(tmp_path / "space-env")
    pip_install(python, "-r", space / "requirements.txt", cwd=space)
    port = app.free_port("0.0.0.0")
    log = tmp_path / "app.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([python, "app.py"], cwd=space, env={**ENV, "GRADIO_SERVER_PORT": str(port)},
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 240  # a bound on waiting, not a measure: the server usually answers in ~20 s
        while "Ctrl-C stops" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert proc.poll() is None, log.read_text()
        assert httpx.get(url, timeout=60).status_code == 200
        client = Client(url, verbose=False)
        endpoints = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
        assert "/analyze" in endpoints and not [e for e in endpoints if "finetune" in e]  # no training on a Space
        table = client.predict("minilm-l6-mlm-nsp-en", TEXT, "", api_name="/analyze")[0]["table"]
        tokens = load(device="cpu").run(TEXT).tokens
        rows = json.loads(table)
        assert [row[rows["headers"].index("token")] for row in rows["data"]] == tokens
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.browser
def test_the_pretrain_tab_trains_with_its_defaults_where_debians_fortunes_are_missing(installed, browser, tmp_path):
    """The default text used to be Debian's fortunes, which `make test` installs and `make app` cannot (root, Debian):
    a new user's first Start was refused. The server runs from the installed wheel, with the fortunes' folder made one
    that is not there, as on such a machine."""
    port = app.free_port()
    script = ("from pathlib import Path; from bertviz_app.corpus import fortunes; "
              "fortunes.FORTUNES = Path('no-fortunes-here'); from bertviz_app.cli import main; "
              f"main(['--port', '{port}', '--threads', '1'])")
    log = tmp_path / "app.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([installed / "python", "-c", script], cwd=tmp_path, stdout=out,
                                stderr=subprocess.STDOUT, env={**ENV, "BERTVIZ_APP_CACHE": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + 240  # a bound on waiting, not a measure
        while "Ctrl-C stops" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert proc.poll() is None, log.read_text()
        v = AppPage(browser, f"http://127.0.0.1:{port}/")
        page = v.page
        v.views_drawn()
        v.open_tab("Pretrain")
        assert page.locator("#pretrain-data input").input_value().startswith("python-help")
        page.click("#pretrain-data input")
        assert "fortunes" not in " ".join(page.locator("[role=option]").all_inner_texts())
        page.keyboard.press("Escape")
        page.click("#pretrain-start")  # every default as it is: the text, classroom, 10 minutes, the sentence
        status = page.locator("#pretrain-status [data-testid=markdown]")
        page.wait_for_function("() => /step [1-9]/.test(document.querySelector('#pretrain-status')?.innerText)",
                               timeout=TIMEOUT_MS * 3)
        assert "from scratch on python-help" in status.inner_text() and "loss " in status.inner_text()
        page.click("#pretrain-stop")
        page.wait_for_function("() => document.querySelector('#pretrain-status')?.innerText.includes('joined the "
                               "model list')", timeout=TIMEOUT_MS * 2)
        assert v.errors == []
        # Shot once the training has stopped: on one core (`taskset -c 0`) the training thread and Chromium share it,
        # and a screenshot taken while it trained waited past 60 s for a frame in 2 of 4 runs.
        shoot(page, tmp_path, "pretrain_first_start_wide")
        with v.on_a_phone():
            status.scroll_into_view_if_needed()
            shoot(page, tmp_path, "pretrain_first_start_phone")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
