"""`bertviz-app export-space`: the folder it writes, what it refuses, and the public server its app.py asks for.
That the folder runs from a fresh environment of its own is tests/test_install.py's (slow) test."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import gradio
import pytest
import yaml

from bertviz_app import catalog, cli, limits, space

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bertviz_app"


def parsed(argv: list[str]):
    parser, _ = cli.build_parser()
    return parser.parse_args(argv)


def test_the_space_serves_as_a_public_server():
    args = parsed(space.serve_argv({}, ["minilm-l6-mlm-nsp-en", "models/tiny"], Path("/srv/space")))
    assert args.command == "serve" and (args.host, args.port) == ("0.0.0.0", 7860)
    assert args.model == ["minilm-l6-mlm-nsp-en", "/srv/space/models/tiny"]
    assert cli.parse_auth(args.auth) is None
    assert not cli.training_settings(args).enabled  # the Fine-tune tab gets no endpoint
    assert not args.behind_proxy  # a visitor could write X-Forwarded-For: everyone counts as the proxy's address
    assert args.sessions_per_address == args.max_sessions == limits.MAX_SESSIONS
    assert (args.max_tokens, args.concurrency, args.threads) == (limits.MAX_TOKENS, limits.CONCURRENCY, limits.THREADS)

    secret = {"BERTVIZ_AUTH": "ann:one\n\n  bob:two:with:colons  \n", "GRADIO_SERVER_PORT": "8123"}
    args = parsed(space.serve_argv(secret, ["minilm-l6-mlm-nsp-en"], Path("/srv/space")))
    assert args.port == 8123
    assert cli.parse_auth(args.auth) == [("ann", "one"), ("bob", "two:with:colons")]
    assert not cli.training_settings(args).enabled


def test_a_secret_that_is_set_but_blank_refuses_to_start(tmp_path):
    for blank in ("", "  \n  ", "\n\n", "\t"):
        with pytest.raises(space.SpaceError, match="BERTVIZ_AUTH is set but holds no USER:PASSWORD line"):
            space.serve_argv({"BERTVIZ_AUTH": blank}, ["minilm-l6-mlm-nsp-en"], Path("/srv/space"))
    # and the Space's app.py says so in one line, without starting
    folder = space.export_space(tmp_path / "space")
    done = subprocess.run([sys.executable, str(folder / "app.py")], env={**os.environ, "BERTVIZ_AUTH": "  \n  "},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("bertviz-app: the secret BERTVIZ_AUTH is set but holds no")


def test_a_folder_that_is_not_empty_is_refused_unless_forced(tmp_path, capsys):
    folder = tmp_path / "space"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    assert cli.main(["export-space", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertviz-app: error: ") and "exists and is not empty; pass --force" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]

    (tmp_path / "file").write_text("")
    assert cli.main(["export-space", str(tmp_path / "file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("model, message", [("no-such-model", "--model no-such-model: not a built-in model"),
                                            ("bert-base-uncased", "nor a checkpoint folder")])
def test_an_unknown_model_is_refused_before_anything_is_written(tmp_path, capsys, model, message):
    assert cli.main(["export-space", str(tmp_path / "space"), "--model", model]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "space").exists()


def test_a_folder_that_is_no_checkpoint_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli.main(["export-space", str(tmp_path / "space"), "--model", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and "Traceback" not in err
    assert not (tmp_path / "space").exists()


def test_the_folder_is_a_space(tmp_path, tiny_mlm_folder, capsys):
    # a clone of the Space's repository: --force replaces what an export writes, and only that
    folder = tmp_path / "clone"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "README.md").write_text("the Space's first README\n")
    (folder / "notes.txt").write_text("mine")
    assert cli.main(["export-space", str(folder), "--model", tiny_mlm_folder, "--force"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (folder / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (folder / "notes.txt").read_text() == "mine"

    front, body = (folder / "README.md").read_text(encoding="utf-8").split("---\n")[1:3]
    front = yaml.safe_load(front)
    assert front["sdk"] == "gradio" and front["sdk_version"] == gradio.__version__
    assert (folder / front["app_file"]).is_file() and len(front["short_description"]) <= 60
    assert space.AUTH_VARIABLE in body

    # the package's dependencies, as pyproject.toml declares them
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = (folder / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == declared

    # every module of the package, and its data, without caches or export-static's runtime
    copied = folder / "bertviz_app"
    modules = {p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules <= {p.relative_to(copied) for p in copied.rglob("*.py")}
    assert {p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.mjs") if "runtime" not in p.parts} <= \
        {p.relative_to(copied) for p in copied.rglob("*.mjs")}
    assert not list(copied.rglob("__pycache__")) and not (copied / "static" / "runtime").exists()
    assert (copied / "assets" / "examples.json").is_file() and (copied / "styles" / "app.css").is_file()
    # the shipped model stays out of a Space that does not serve it; the folder named is copied
    assert not (copied / "assets" / catalog.ENGLISH_MLM_NAME).exists()
    name = Path(tiny_mlm_folder).name
    assert sorted(p.name for p in (folder / "models" / name).iterdir()) == \
        sorted(p.name for p in Path(tiny_mlm_folder).iterdir() if p.is_file())

    # app.py serves that model through serve_argv
    tree = ast.parse((folder / "app.py").read_text())
    (models,) = [ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "MODELS"]
    assert models == [f"models/{name}"]
    assert "space.serve_argv(os.environ, MODELS, HERE)" in (folder / "app.py").read_text()
    assert "*.safetensors filter=lfs" in (folder / ".gitattributes").read_text()


def test_a_checkpoint_publishes_only_its_own_files(tmp_path, tiny_mlm_folder, capsys):
    """A training's folder holds more than the model: the training data's path (metrics.json), the held-out texts,
    the owner's notes, and links to anything. Only the model's own files go into the Space, and the export says which
    before it writes."""
    model = tmp_path / "trained"
    shutil.copytree(tiny_mlm_folder, model)
    own = sorted(p.name for p in model.iterdir())
    (model / "README.md").write_text("# a model card\n")
    (model / "metrics.json").write_text('{"settings": {"train": "/home/teacher/private/grades.csv"}}')
    (model / "heldout_predictions.jsonl").write_text('{"text": "a pupil\'s private sentence"}\n')
    (model / "notes.txt").write_text("not for publishing")
    (tmp_path / "credentials.txt").write_text("password=hunter2")
    (model / "notes-link.txt").symlink_to(tmp_path / "credentials.txt")
    (model / "tokenizer_config.json").unlink()
    (tmp_path / "settings.json").write_text('{"do_lower_case": true, "password": "hunter2"}')
    (model / "tokenizer_config.json").symlink_to(tmp_path / "settings.json")  # a name the model reads
    (model / "timeline").mkdir()
    folder = space.export_space(tmp_path / "space", [str(model)])
    published = sorted(p.name for p in (folder / "models" / "trained").iterdir())
    assert published == sorted([*(n for n in own if n != "tokenizer_config.json"), "README.md"])
    assert not any(p.is_symlink() for p in (folder / "models" / "trained").iterdir())
    assert "hunter2" not in "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()
                                    and p.suffix in (".txt", ".json", ".jsonl", ".md"))
    said = capsys.readouterr().out
    assert f"models/trained publishes {', '.join(published)}" in said
    assert ("left out: heldout_predictions.jsonl, metrics.json, notes-link.txt (a link), notes.txt, timeline/, "
            "tokenizer_config.json (a link)") in said
