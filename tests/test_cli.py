"""`bertviz-app`: parsing, the default command, startup errors in words, and --share without internet."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bertviz_app import app, cli

ROOT = Path(__file__).resolve().parent.parent


def test_help_lists_the_launch_options(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for option in ("serve", "--model", "--device", "--host", "--port", "--share", "--auth", "--max-tokens",
                   "--concurrency", "--threads", "--cache-mb", "--max-sessions", "--session-minutes",
                   "--sessions-per-address", "--behind-proxy"):
        assert option in out


def test_no_command_means_serve():
    parser, _ = cli.build_parser()
    assert cli._with_default_command([]) == ["serve"]
    assert cli._with_default_command(["--port", "1"]) == ["serve", "--port", "1"]
    assert cli._with_default_command(["serve", "--share"]) == ["serve", "--share"]
    args = parser.parse_args(cli._with_default_command(["--model", "a", "--model", "b", "--auth", "u:p"]))
    assert args.command == "serve" and args.model == ["a", "b"] and args.auth == ["u:p"]
    assert args.host == "127.0.0.1"


def test_a_subcommand_is_one_call(monkeypatch, capsys):
    def add_hello(commands):
        p = commands.add_parser("hello", help="say hello")
        p.set_defaults(handler=lambda args: print("hello") or 0)
        return p

    monkeypatch.setattr(cli, "COMMANDS", {**cli.COMMANDS, "hello": add_hello})
    assert cli.main(["hello"]) == 0
    assert capsys.readouterr().out == "hello\n"


def test_auth_pairs_and_files(tmp_path):
    assert cli.parse_auth(None) is None
    assert cli.parse_auth(["ann:pw:with:colons"]) == [("ann", "pw:with:colons")]
    users = tmp_path / "users.txt"
    users.write_text("# team\nann:one\n\nbob:two\n")
    assert cli.parse_auth([str(users), "cy:three"]) == [("ann", "one"), ("bob", "two"), ("cy", "three")]
    for bad in ("nocolon", ":pw", "user:"):
        with pytest.raises(cli.UsageError, match="USER:PASSWORD"):
            cli.parse_auth([bad])


@pytest.fixture
def fake_app(monkeypatch):
    """The serve command without loading a model or opening a port."""
    calls = {}
    monkeypatch.setattr(cli.gc, "freeze", lambda: None)  # frozen, this test process would keep all it holds now
    monkeypatch.setattr(app, "load_models", lambda models, **kw: calls.setdefault("load", (models, kw)) and {})
    monkeypatch.setattr(app, "build_demo", lambda explorers, **kw: calls.setdefault("build", kw))
    monkeypatch.setattr(app, "serve", lambda demo, **kw: calls.setdefault("serve", kw))
    return calls


def test_serve_passes_the_options_on(fake_app, capsys):
    assert cli.main(["--model", "m1", "--model", "m2", "--device", "cpu", "--port", "8123", "--max-tokens", "64",
                     "--concurrency", "3", "--auth", "u:p", "--cache-mb", "32", "--max-sessions", "40",
                     "--session-minutes", "1.5", "--sessions-per-address", "7", "--behind-proxy",
                     "--cache-dtype", "float16"]) == 0
    # trained: the models the Fine-tune tab trained before are offered only where it may train (not here)
    assert fake_app["load"] == (["m1", "m2"], {"device": "cpu", "max_tokens": 64, "cache_mb": 32,
                                               "cache_dtype": "float16", "trained": False})
    training = fake_app["build"].pop("training")
    assert fake_app["build"] == {"concurrency": 3}
    # 127.0.0.1, but a reverse proxy forwards others' visitors: the Fine-tune tab may not train unless allowed
    assert not training.enabled and "--behind-proxy" in training.why_off and training.cache_mb == 32
    assert fake_app["serve"] == {"host": "127.0.0.1", "port": 8123, "share": False, "auth": [("u", "p")],
                                 "max_sessions": 40, "session_idle_s": 90, "sessions_per_address": 7,
                                 "behind_proxy": True}
    assert capsys.readouterr().err == ""


def test_serve_bounds_a_training_and_lets_its_operator_stop_it_with_sigusr1(fake_app, monkeypatch, capsys):
    import os
    import signal

    before = signal.getsignal(signal.SIGUSR1)
    during = []
    monkeypatch.setattr(app, "serve", lambda demo, **kw: during.append(signal.getsignal(signal.SIGUSR1)))
    assert cli.main(["--device", "cpu", "--max-training-minutes", "7.5"]) == 0
    training = fake_app["build"]["training"]
    assert training.enabled and training.max_minutes == 7.5 and not training.shared
    out = capsys.readouterr().out
    assert f"fine-tuning is on (each stops after 7.5 minutes); `kill -USR1 {os.getpid()}` stops the training under " \
           "way" in out
    # the serve command's own handler while it serves; the one before it afterwards
    assert callable(during[0]) and during[0] is not before and signal.getsignal(signal.SIGUSR1) is before
    assert cli.main(["--device", "cpu", "--max-training-minutes", "-1"]) == 2
    assert "--max-training-minutes must be a number of minutes, 0 or more" in capsys.readouterr().err
    # without fine-tuning there is nothing to stop: no handler, no line
    during.clear()
    assert cli.main(["--device", "cpu", "--host", "0.0.0.0"]) == 0
    assert during == [before] and "kill -USR1" not in capsys.readouterr().out


def test_serve_traces_each_model_and_freezes_what_lives_before_it_serves(monkeypatch):
    order = []

    class Loaded:
        def warm_up(self):
            order.append("warm up")

    monkeypatch.setattr(app, "load_models", lambda models, **kw: {"a": Loaded(), "b": Loaded()})
    monkeypatch.setattr(app, "build_demo", lambda explorers, **kw: order.append("build"))
    monkeypatch.setattr(app, "serve", lambda demo, **kw: order.append("serve"))
    # what lives from the start is frozen for the collector (it would walk it in every full collection)
    monkeypatch.setattr(cli.gc, "freeze", lambda: order.append("freeze"))
    assert cli.main(["--device", "cpu"]) == 0
    assert order == ["warm up", "warm up", "build", "freeze", "serve"]


def test_the_defaults_are_the_library_s():
    """The command line, the explorer and the server take their defaults from one place, bertviz_app.limits."""
    from bertviz_app import explorer, limits
    from bertviz_app.app import server

    args = cli.build_parser()[0].parse_args(["serve"])
    assert (args.cache_mb, args.max_sessions, args.session_minutes, args.max_tokens) == (
        limits.CACHE_MB, limits.MAX_SESSIONS, limits.SESSION_MINUTES, limits.MAX_TOKENS) == (256, 500, 60, 256)
    assert explorer.DEFAULT_CACHE_MB == limits.CACHE_MB and server.SESSION_IDLE_S == 60 * limits.SESSION_MINUTES
    assert args.cache_dtype == limits.CACHE_DTYPE == "float32"
    assert (args.threads, args.concurrency) == (limits.THREADS, limits.CONCURRENCY) == (1, 2)


@pytest.mark.parametrize("host, warns", [("0.0.0.0", True), ("::", True), ("192.0.2.7", True), ("127.0.0.1", False),
                                         ("127.0.0.2", False), ("localhost", False), ("::1", False),
                                         ("[::1]", False)])
def test_the_open_to_the_network_warning_is_for_other_hosts_only(fake_app, capsys, host, warns):
    assert cli.main(["--host", host]) == 0
    assert ("anyone who can reach this machine" in capsys.readouterr().err) == warns
    assert cli.main(["--host", host, "--auth", "u:p"]) == 0
    assert "anyone" not in capsys.readouterr().err


def test_without_models_the_built_in_ones_are_offered(fake_app):
    from bertviz_app.catalog import builtin_models

    assert cli.main([]) == 0
    assert fake_app["load"][0] == list(builtin_models())
    assert fake_app["load"][0][-1] == "all-MiniLM-L6-v2"  # the encoder before our training, to compare with


def test_share_without_auth_warns(fake_app, capsys):
    assert cli.main(["--share"]) == 0
    assert "anyone who has the public link" in capsys.readouterr().err
    assert cli.main(["--share", "--auth", "u:p"]) == 0
    assert "anyone" not in capsys.readouterr().err


def test_threads_sets_torch_threads(fake_app):
    import torch

    before = torch.get_num_threads()
    try:
        assert cli.main(["--threads", "1"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("argv, message", [(["--port", "70000"], "not a port"), (["--concurrency", "0"], "at least 1"),
                                           (["--threads", "0"], "at least 1"),
                                           (["--auth", "nocolon"], "USER:PASSWORD"),
                                           (["--cache-mb", "-1"], "0 or more"), (["--cache-mb", "inf"], "0 or more"),
                                           (["--cache-mb", "nan"], "0 or more"), (["--max-sessions", "0"], "at least 1"),
                                           (["--sessions-per-address", "0"], "at least 1"),
                                           (["--session-minutes", "0"], "more than 0"),
                                           (["--session-minutes", "nan"], "more than 0")])
def test_bad_options_exit_2_in_words(fake_app, capsys, argv, message):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def _bertviz_app(*argv, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "bertviz_app", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})


def test_cuda_without_a_gpu_fails_at_startup_in_words():
    # CUDA_VISIBLE_DEVICES="" hides any GPU, so this holds on a GPU machine too
    result = _bertviz_app("--device", "cuda", "--port", str(app.free_port()), env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 2
    assert "no CUDA GPU" in result.stderr and "Traceback" not in result.stderr


def test_a_missing_model_fails_at_startup_in_words(tmp_path):
    result = _bertviz_app("--model", str(tmp_path / "nowhere"), "--device", "cpu", "--port", str(app.free_port()))
    assert result.returncode == 2
    assert "nowhere" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.real_weights
def test_share_offline_says_so_and_keeps_serving_locally(tmp_path):
    """The share tunnel needs gradio.live; here (and on CI) it cannot be reached: one clear line, local app on."""
    port = app.free_port()
    env = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "NO_PROXY": "127.0.0.1,localhost", "GRADIO_ANALYTICS_ENABLED": "False"}  # offline even with internet
    log = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "bertviz_app", "--share", "--device", "cpu", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and "could not create" not in (tmp_path / "stderr.txt").read_text():
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
            time.sleep(0.5)
        err = (tmp_path / "stderr.txt").read_text()
        assert "could not create the public --share link" in err and "keeps serving locally" in err
        assert "anyone who has the public link" in err  # --share without --auth
        assert "Traceback" not in err
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200 and "bertviz-app" in page.text
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_pretrain_command_trains_and_saves_a_loadable_checkpoint(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nIt was tired.\nThen it slept.\n\n"
                      "A dog ran in the park.\nThe sun was warm.\nBirds sang.\n\n"
                      "We cooked dinner.\nThe soup was hot.\nEveryone ate.\n", encoding="utf-8")
    out = tmp_path / "run"
    assert cli.main(["pretrain", "--corpus", str(corpus), "--preset", "tiny", "--steps", "2", "--batch-size", "2",
                     "--max-length", "32", "--out", str(out)]) == 0
    from bertviz_app import load

    explorer = load(str(out / "step-0000002"), device="cpu")
    assert explorer.has_mlm_head and explorer.has_nsp_head
    assert len(explorer.fill_mask("The [mask] sat.", top_k=3)[0]) == 3


def test_pretrain_command_refuses_a_missing_corpus_in_words(tmp_path, capsys):
    assert cli.main(["pretrain", "--corpus", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "no corpus" in capsys.readouterr().err


def _broken_copy(src: str, dst: Path, how: str) -> Path:
    """A copy of the tiny checkpoint folder with one thing wrong."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    if how == "too many layers":
        (dst / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 100_000}))
    elif how in ("keys that do not fit", "NaN weights"):
        state = load_file(dst / "model.safetensors")
        if how == "NaN weights":
            state["bert.encoder.layer.0.output.dense.weight"][0, 0] = float("nan")
        else:
            del state["bert.encoder.layer.1.output.dense.bias"]
            state["lm_head.weight"] = state["cls.predictions.bias"].clone()
        save_file(state, dst / "model.safetensors")
    elif how == "config.json is /dev/zero":
        (dst / "config.json").unlink()
        (dst / "config.json").symlink_to("/dev/zero")
    elif how == "deeply nested tokenizer_config.json":
        (dst / "tokenizer_config.json").write_text("[" * 100_000)
    return dst


@pytest.mark.parametrize("how, message", [
    ("too many layers", "num_hidden_layers is 100000, above the limit of 256"),
    ("keys that do not fit", "do not fit a BertForPreTraining built from its config.json: missing 1: "
                             "bert.encoder.layer.1.output.dense.bias; unexpected 1: lm_head.weight; check that"),
    ("NaN weights", "hold NaN or infinite values: bert.encoder.layer.0.output.dense.weight; the checkpoint is damaged"),
    ("config.json is /dev/zero", "config.json is a device (a link to /dev/zero), not a regular file"),
    ("deeply nested tokenizer_config.json", "tokenizer_config.json is not valid JSON (it is nested too deeply"),
])
def test_every_load_failure_is_one_line_and_exit_2(tmp_path, tiny_mlm_folder, capsys, monkeypatch, how, message):
    # A checkpoint that loads after all must fail the test, not serve it until the test run is killed.
    monkeypatch.setattr(app, "serve", lambda *args, **kwargs: pytest.fail(f"a checkpoint with {how} was served"))
    folder = _broken_copy(tiny_mlm_folder, tmp_path / "ckpt", how)
    assert cli.main(["--model", str(folder), "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("bertviz-app: error: ") and captured.err.count("\n") == 1, captured.err
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


def test_evaluate_reports_a_bad_checkpoint_in_one_line(tmp_path, tiny_mlm_folder, capsys):
    folder = _broken_copy(tiny_mlm_folder, tmp_path / "ckpt", "keys that do not fit")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat.\nIt slept.\n\nA dog ran.\nThe sun shone.\n", encoding="utf-8")
    assert cli.main(["evaluate", str(folder), "--heldout", str(corpus)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertviz-app: error: the weights in ") and err.count("\n") == 1, err


def test_one_line_joins_a_listing_after_its_colon():
    assert cli.one_line("a:\n  b: 1\n  c\n") == "a: b: 1; c"
    assert cli.one_line("single") == "single"


@pytest.mark.parametrize("command", ["serve", "finetune", "pretrain"])
def test_help_says_each_default_once_and_never_none(command, capsys):
    """`finetune --help` printed "(default: the built-in default model) (default: None)"."""
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert "(default: None)" not in out and "default" in out
    for option in re.split(r"\n  (?=-)", out):
        assert option.count("(default") <= 1, option
