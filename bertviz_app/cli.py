"""`bertviz-app`: one entry point with subcommands. `bertviz-app [options]` is `bertviz-app serve [options]`.

A new subcommand is one entry in COMMANDS: a function that takes the subparsers object, adds its parser and sets
`handler` (a function of the parsed arguments returning an exit code) with `set_defaults`. gradio and torch are
imported only by the handlers that need them, so that `bertviz-app --help` answers at once.
"""

from __future__ import annotations

import argparse
import gc
import ipaddress
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from . import __version__, limits
from .settings import HelpFormatter

DEFAULT_COMMAND = "serve"
DEFAULT_PORT = 7860


class UsageError(ValueError):
    """A command line that cannot work; the message says what to change."""


def add_serve_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "serve", help="launch the web UI (the default command)",
        description="Launch the web UI. Open the printed address in a browser.",
        formatter_class=HelpFormatter)
    p.add_argument("--model", action="append", metavar="PATH_OR_HUB_ID", default=argparse.SUPPRESS,
                   help="a BERT checkpoint folder (Hugging Face format), hub id or built-in name; repeat to offer "
                        "several in the UI's model picker (default: the built-in minilm-l6-mlm-nsp-en, our English "
                        "masked-LM model, and all-MiniLM-L6-v2, the encoder it was trained from)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where the model runs; auto picks a CUDA GPU when there is one")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind; 127.0.0.1 keeps the app on this machine, 0.0.0.0 opens it to the network")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help="port to listen on; 0 picks a free one")
    p.add_argument("--share", action="store_true",
                   help="also open a temporary public link through gradio.live (needs internet; use with --auth)")
    p.add_argument("--auth", action="append", metavar="USER:PASSWORD|FILE",
                   help="require a login; repeat for several users, or name a file with one USER:PASSWORD a line")
    p.add_argument("--max-tokens", type=int, default=limits.MAX_TOKENS,
                   help="longer inputs are truncated to this many tokens (and never beyond the model's limit)")
    p.add_argument("--concurrency", type=int, default=limits.CONCURRENCY,
                   help="forward passes of new inputs that may run at the same time (each may batch several "
                        "waiting inputs), and as many of the other tabs' model work; more requests wait in a queue")
    p.add_argument("--threads", type=int, default=limits.THREADS,
                   help="CPU threads for PyTorch, per forward pass; 1 keeps the app responsive on a machine that "
                        "also runs other work, more may serve one visitor's long inputs faster on idle cores")
    p.add_argument("--cache-mb", type=float, default=limits.CACHE_MB,
                   help="megabytes of analyzed inputs each model keeps, so that the other tabs, exports and the "
                        "query/key view need no new forward pass (least recently used out first); one 512-token "
                        "input of the default model weighs 98 MB in float32 (62 MB in float16), a 32-token sentence "
                        "1.5 MB")
    p.add_argument("--cache-dtype", choices=("float32", "float16"), default=limits.CACHE_DTYPE,
                   help="precision of the attention each analyzed input keeps: float32 is the model's own numbers "
                        "(the CSV export equals transformers); float16 keeps each weight within 2**-11 and fits "
                        "twice as many 512-token inputs in --cache-mb (10%% more 32-token ones)")
    p.add_argument("--max-sessions", type=int, default=limits.MAX_SESSIONS,
                   help="visitor sessions kept; past this the least recently used is forgotten")
    p.add_argument("--sessions-per-address", type=int, default=limits.SESSIONS_PER_ADDRESS,
                   help="sessions one client address may hold (a class behind one address shares them); past this "
                        "that address's least recently used is forgotten, no one else's")
    p.add_argument("--behind-proxy", action="store_true",
                   help="a reverse proxy on this machine forwards the visitors: take their address from its "
                        "X-Forwarded-For (otherwise that header is ignored, since anyone can write it)")
    p.add_argument("--session-minutes", type=float, default=limits.SESSION_MINUTES,
                   help="a session idle for this long is forgotten (its visitor analyzes again when back)")
    p.add_argument("--allow-training", action="store_true",
                   help="let visitors fine-tune in the Fine-tune tab on a server others can reach (--host other than "
                        "127.0.0.1, or --share); on 127.0.0.1 it is on without this")
    p.add_argument("--data", action="append", metavar="FILE", default=[],
                   help="a labelled file the Fine-tune tab offers beside the built-in recipes (CSV/TSV/JSONL with "
                        "text and label columns, CoNLL, SQuAD JSON); repeat for several. Visitors pick it by name, "
                        "never send a file")
    p.add_argument("--pretrain-data", action="append", metavar="FILE", default=[],
                   help="a UTF-8 text (one sentence per line, a blank line between documents) the Pretrain tab offers "
                        "beside its built-in ones (Python's help topics, Debian's fortunes where installed); repeat "
                        "for several")
    p.add_argument("--max-training-minutes", type=float, default=limits.TRAINING_MINUTES,
                   help="a training started in the Fine-tune tab stops after this many minutes, as Cancel stops it "
                        "(the best complete epoch is kept); 0: no bound. `kill -USR1 <server pid>` stops the one "
                        "under way at any time")
    p.add_argument("--corpus", action="append", metavar="DIR", default=[],
                   help="a corpus folder built with `bertviz-app corpus build` (repeat for several): adds the Corpus "
                        "tab (heads over the corpus, query/key maps, search by meaning, the sentence map); its model "
                        "is loaded too when --model does not name it. A folder that cannot be read is left out with a "
                        "warning, and the tab says why")
    p.set_defaults(handler=run_serve)
    return p


# Subcommands, in the order `--help` lists them. Another module adds one by appending its `add_*_command`.
def add_pretrain_command(commands) -> argparse.ArgumentParser:
    from . import pretraining

    p = commands.add_parser(
        "pretrain", help="pretrain or continue pretraining a BERT with masked LM + next sentence",
        description="Pretrain BERT (masked LM + next-sentence prediction) on plain-text files; checkpoints are "
                    "Hugging Face format folders that `bertviz-app --model` and transformers load. Re-running the "
                    "same command resumes from the newest checkpoint in --output.",
        formatter_class=HelpFormatter)
    pretraining.add_pretrain_arguments(p)
    p.set_defaults(handler=lambda args: _in_words(pretraining.run_pretrain, args))
    return p


def add_evaluate_command(commands) -> argparse.ArgumentParser:
    from . import pretraining

    p = commands.add_parser(
        "evaluate", help="masked-token and next-sentence accuracy of a checkpoint on held-out text",
        description="Held-out masked-token top-1/top-5 and next-sentence accuracy against a unigram baseline, "
                    "then a few probe sentences.")
    pretraining.add_evaluate_arguments(p)
    p.set_defaults(handler=lambda args: _in_words(pretraining.run_evaluate, args))
    return p


def add_export_static_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "export-static", help="write a folder that runs the model in the browser, for any static host or file://",
        description="Write DIR: a page with the attention views, fill-mask and next sentence whose model runs "
                    "in the visitor's browser (ONNX under onnxruntime-web). Serve DIR with any static web server, "
                    "or open DIR/index.html from a disk: no server and no network are needed afterwards.")
    p.add_argument("dir", metavar="DIR", help="the folder to write (created; an earlier export there is replaced)")
    p.add_argument("--model", default=None, metavar="NAME_OR_DIR",
                   help="a built-in name or a checkpoint folder with both pretraining heads "
                        "(default: minilm-l6-mlm-nsp-en)")
    p.add_argument("--lesson", default=None, metavar="FILE",
                   help="a lesson saved from the app's Lesson bar, copied into DIR: the page's Lesson button plays "
                        "it, and DIR/index.html?lesson=NAME&step=N opens step N (NAME: the file's name)")
    p.add_argument("--no-shipped-lessons", dest="shipped_lessons", action="store_false",
                   help="leave out the lessons that come with bertviz-app (by default the page's Lesson button lists "
                        "them all)")
    # the names as in static/onnx_export.WEIGHTS, written out: the parser is built without importing onnx
    p.add_argument("--weights", choices=("float16", "float32", "int8"), default="float16",
                   help="how the model's matrices are stored: float16 (the default: exact for the built-in model; "
                        "a first visit reads 46 MB from a host that gzips), float32 (for a checkpoint trained in "
                        "float32: twice float16's bytes), int8 (one scale per output channel: 25 MB over gzip, but "
                        "attention moves by up to 0.13; docs/guide/static-page.md has the figures)")
    p.set_defaults(handler=run_export_static)
    return p


def run_export_static(args: argparse.Namespace) -> int:
    from .explorer import load
    from .static import ExportError, RuntimeMissing

    try:
        explorer = load(args.model, device="cpu")
        folder = explorer.export_static(args.dir, lesson=args.lesson, weights=args.weights,
                                         shipped_lessons=args.shipped_lessons)
    except (ExportError, RuntimeMissing, ValueError, OSError) as err:
        raise UsageError(str(err)) from None
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"wrote {folder} ({size / 1e6:.1f} MB): open {folder / 'index.html'} or serve the folder")
    return 0


def add_export_space_command(commands) -> argparse.ArgumentParser:
    from . import space

    p = commands.add_parser(
        "export-space", help="write a folder that is a Hugging Face Space serving the app",
        description="Write DIR: a Gradio Space as it stands (README.md with the Space's settings, app.py, "
                    "requirements.txt, this package and the models it serves). Push it to a Space with git (the "
                    "docs/guide/space.md), or try it here with `python DIR/app.py`. The Space serves with a "
                    "public page's settings: fine-tuning off, the default limits, and a login when its secret "
                    f"{space.AUTH_VARIABLE} holds USER:PASSWORD lines.",
        formatter_class=HelpFormatter)
    p.add_argument("dir", metavar="DIR", help="the folder to write (created)")
    p.add_argument("--model", action="append", metavar="NAME_OR_DIR", default=None,
                   help="a built-in name or a checkpoint folder (copied into DIR); repeat to offer several "
                        "(default: minilm-l6-mlm-nsp-en)")
    p.add_argument("--force", action="store_true",
                   help="write into DIR although it is not empty (a clone of the Space's repository), replacing "
                        "what an export writes there; other files stay")
    p.set_defaults(handler=run_export_space)
    return p


def run_export_space(args: argparse.Namespace) -> int:
    from .space import export_space

    try:
        folder = export_space(args.dir, args.model, force=args.force)
    except (ValueError, OSError) as err:  # SpaceError, a folder that is no checkpoint, a full disk
        raise UsageError(str(err)) from None
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"wrote {folder} ({size / 1e6:.1f} MB): push it to a Hugging Face Space (docs/guide/space.md), "
          f"or try it with `python {folder / 'app.py'}`")
    return 0


def add_finetune_command(commands) -> argparse.ArgumentParser:
    from .finetuning import recipes
    from .finetuning.training import add_finetune_arguments

    p = commands.add_parser(
        "finetune", help="fine-tune BERT for a task (classification, tagging, question answering)",
        description="Fine-tune BERT on labelled data and write a Hugging Face folder (config.json with the labels, "
                    "model.safetensors, tokenizer files) plus metrics.json. Built-in recipes fetch real data on first "
                    f"use: {', '.join(f'{n} ({r.task})' for n, r in recipes.RECIPES.items())}. Under torchrun: "
                    "`torchrun --nproc_per_node 2 -m bertviz_app.finetuning TASK ...`.",
        formatter_class=HelpFormatter)
    add_finetune_arguments(p)

    def handler(args: argparse.Namespace) -> int:
        from .finetuning import run_finetune

        try:
            run_finetune(args)
        except RuntimeError as err:  # a loss that became NaN: the message says what to change
            raise UsageError(str(err)) from None
        return 0

    p.set_defaults(handler=lambda args: _in_words(handler, args))
    return p


def add_corpus_command(commands) -> argparse.ArgumentParser:
    from .corpus import CORPUS_RECIPES, CorpusSettings
    from .settings import add_arguments

    p = commands.add_parser(
        "corpus", help="build a corpus: many sentences through the model, for head summaries, search and maps",
        description="Corpus commands. `bertviz-app corpus build SOURCE --output DIR` runs every sentence of SOURCE "
                    "through the model and keeps, per token, every layer's hidden state and every head's attention "
                    "statistics, in shards; re-running it resumes. Then, in Python: "
                    "`bertviz_app.open_corpus(DIR).head_summary()`, `.search(...)`, `.qk_map(...)`. Under torchrun "
                    "(`torchrun --nproc_per_node 2 -m bertviz_app corpus build ...`) each process builds its share.",
        formatter_class=HelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build", help="build (or finish) a corpus folder", formatter_class=HelpFormatter,
        description="Recipes, fetched at first use: " + "; ".join(f"{n}: {d}" for n, d in CORPUS_RECIPES.items()))
    add_arguments(build, CorpusSettings)

    def handler(args: argparse.Namespace) -> int:
        from .corpus import build_corpus
        from .settings import as_dict, from_args

        settings = as_dict(from_args(CorpusSettings, args))
        build_corpus(settings.pop("source"), settings.pop("output"), settings.pop("model"), **settings)
        return 0

    build.set_defaults(handler=lambda args: _in_words(handler, args))
    return p


def _in_words(job: Callable[[argparse.Namespace], object], args: argparse.Namespace) -> int:
    try:
        job(args)
    except (ValueError, OSError) as err:  # bad corpus, checkpoint or option: the message says what to do
        raise UsageError(str(err)) from None
    return 0


# Subcommands in the order `--help` lists them: name -> the function that adds its parser.
COMMANDS: dict[str, Callable[..., argparse.ArgumentParser]] = {
    "serve": add_serve_command, "pretrain": add_pretrain_command, "evaluate": add_evaluate_command,
    "export-static": add_export_static_command, "export-space": add_export_space_command,
    "finetune": add_finetune_command, "corpus": add_corpus_command}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each subcommand's own parser by name."""
    parser = argparse.ArgumentParser(
        prog="bertviz-app", description="See inside BERT in your browser.",
        epilog=f"Without a command, `{DEFAULT_COMMAND}` runs: `bertviz-app --port 8000` is "
               f"`bertviz-app {DEFAULT_COMMAND} --port 8000`. `bertviz-app COMMAND --help` lists a command's options.")
    parser.add_argument("--version", action="version", version=f"bertviz-app {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser, {name: add(commands) for name, add in COMMANDS.items()}


def _with_default_command(argv: list[str]) -> list[str]:
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return [DEFAULT_COMMAND, *argv]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, commands = build_parser()
    if argv in (["-h"], ["--help"]):
        # Most people want the launch options: show them under the list of commands.
        parser.print_help()
        print(f"\noptions of `{DEFAULT_COMMAND}` (the default command):")
        print(commands[DEFAULT_COMMAND].format_help().split("\n\n", 2)[-1])
        return 0
    args = parser.parse_args(_with_default_command(argv))
    try:
        return args.handler(args)
    except UsageError as err:
        print(f"bertviz-app: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def one_line(message: str) -> str:
    """A message of several lines (a checkpoint's list of missing and mismatched keys) as one line, so that the
    `bertviz-app: error:` prefix, and a log reader that greps for it, sees all of it."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = lines[0] if lines else ""
    for line in lines[1:]:
        text += (" " if text.endswith(":") else "; ") + line
    return text


# --- serve ------------------------------------------------------------------------------------------------------------
def parse_auth(values: list[str] | None) -> list[tuple[str, str]] | None:
    """`USER:PASSWORD` pairs, each given directly or as a file with one pair a line (blank lines and # comments
    skipped). A value that names an existing file is read as a file."""
    if not values:
        return None
    pairs: list[tuple[str, str]] = []
    for value in values:
        path = Path(value).expanduser()
        if path.is_file():
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as err:
                raise UsageError(f"could not read the --auth file {value} ({err})") from None
            entries = [(f"{value}, line {n}", line.strip()) for n, line in enumerate(lines, 1)
                       if line.strip() and not line.lstrip().startswith("#")]
            if not entries:
                raise UsageError(f"the --auth file {value} has no USER:PASSWORD lines")
        else:
            entries = [("--auth", value)]
        for where, entry in entries:
            user, sep, password = entry.partition(":")  # a password may contain ':', a user name may not
            if not sep or not user or not password:
                raise UsageError(f"{where}: expected USER:PASSWORD (or the path of an existing file of such lines)")
            pairs.append((user, password))
    return pairs


def is_loopback(host: str) -> bool:
    """True when `host` (an address or a name) reaches only this machine: 127.0.0.0/8, ::1, or a name that resolves
    to nothing else. A name that does not resolve counts as not loopback (the warning is better said once too often)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def training_settings(args: argparse.Namespace):
    """The Fine-tune tab's rule: on where only this machine reaches the server, else only with --allow-training;
    the --data files checked before anything loads."""
    from .app.lane.pretraining import text_problem
    from .app.lane.training import TrainingSettings, file_task

    for name in args.data:
        if not Path(name).expanduser().is_file():
            raise UsageError(f"--data {name}: no such file")
        try:
            file_task(Path(name).expanduser())
        except (ValueError, OSError) as err:
            raise UsageError(str(err)) from None
    for name in args.pretrain_data:
        problem = text_problem(Path(name).expanduser()) if Path(name).expanduser().is_file() else "no such file"
        if problem:
            raise UsageError(f"--pretrain-data {name}: {problem}")
    return TrainingSettings.for_server(args.host, is_loopback(args.host), args.share, args.allow_training,
                                       [str(Path(n).expanduser().resolve()) for n in args.data], args.cache_mb,
                                       proxied=args.behind_proxy, max_minutes=args.max_training_minutes,
                                       pretrain_files=[str(Path(n).expanduser().resolve()) for n in args.pretrain_data])


def install_training_stop():
    """SIGUSR1 stops the training under way, as its page's Cancel would (whoever started it). Returns the handler it
    replaced, or None where the system has no SIGUSR1 (Windows). The stop runs in a thread of its own: a signal
    handler runs in the main thread between two of its steps, and must not wait for a lock that thread may hold."""
    if not hasattr(signal, "SIGUSR1"):
        return None

    def stop() -> None:
        from .app.lane.training import stop_trainings

        stopped = stop_trainings()
        print("bertviz-app: SIGUSR1: " + ("stopping the training under way; it ends after the step under way, "
                                          "keeping its best complete epoch" if stopped else "no training is running"),
              file=sys.stderr, flush=True)

    before = signal.signal(signal.SIGUSR1, lambda signum, frame: threading.Thread(
        target=stop, name="bertviz-training-stop", daemon=True).start())
    return signal.SIG_DFL if before is None else before  # None: one set outside Python; the default is restored


def open_served_corpora(app, args: argparse.Namespace, explorers: dict) -> tuple[dict, list[str]]:
    """The corpora of --corpus (their models loaded into `explorers` where needed), and one warning line for each
    that cannot be read: the server starts without it, and its tab says why."""
    if not getattr(args, "corpus", None):
        return {}, []
    from .app.tabs.corpus import open_corpora

    def load_model(source):
        return next(iter(app.load_models([source], device=args.device, max_tokens=args.max_tokens,
                                         cache_mb=args.cache_mb, cache_dtype=args.cache_dtype).values()))

    corpora, problems = open_corpora(args.corpus, explorers, load_model)
    for problem in problems:
        print(f"bertviz-app: warning: {problem}", file=sys.stderr)
    return corpora, problems


def run_serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port number (0 to 65535)")
    if args.max_tokens < 8:
        raise UsageError("--max-tokens must be at least 8")
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.threads < 1:
        raise UsageError("--threads must be at least 1")
    if not 0 <= args.cache_mb < float("inf"):  # written so that nan fails too
        raise UsageError("--cache-mb must be a number of megabytes, 0 or more (0 keeps only the latest input)")
    if args.max_sessions < 1:
        raise UsageError("--max-sessions must be at least 1")
    if args.sessions_per_address < 1:
        raise UsageError("--sessions-per-address must be at least 1")
    if not 0 < args.session_minutes < float("inf"):
        raise UsageError("--session-minutes must be a number of minutes, more than 0")
    if not 0 <= args.max_training_minutes < float("inf"):
        raise UsageError("--max-training-minutes must be a number of minutes, 0 or more (0: no bound)")
    auth = parse_auth(args.auth)
    if args.share and not auth:
        print("bertviz-app: warning: --share without --auth: anyone who has the public link can use this app "
              "(and your machine's compute); add --auth USER:PASSWORD", file=sys.stderr)
    if not auth and not is_loopback(args.host):
        print(f"bertviz-app: warning: listening on {args.host} without --auth: anyone who can reach this machine "
              "can use the app", file=sys.stderr)

    import torch

    from . import app  # gradio is slow to import: only after the arguments are known to be good
    from .catalog import builtin_models

    training = training_settings(args)  # a missing --data file is said before the models load

    # OpenMP threads that outnumber free cores spin against each other: a 25 ms pass became 600 ms here.
    torch.set_num_threads(args.threads)
    try:
        models = getattr(args, "model", None) or list(builtin_models())
        explorers = app.load_models(models, device=args.device, max_tokens=args.max_tokens, cache_mb=args.cache_mb,
                                    cache_dtype=args.cache_dtype, trained=training.enabled)
    except (ValueError, OSError) as err:  # CheckpointError, ConfigError, a missing GPU, a disk: all say what to do
        raise UsageError(str(err)) from None
    corpora, problems = open_served_corpora(app, args, explorers)
    for explorer in explorers.values():
        explorer.warm_up()
    with_corpora = dict(corpora=corpora, corpus_problems=problems) if corpora or problems else {}
    demo = app.build_demo(explorers, concurrency=args.concurrency, training=training, **with_corpora)
    # A full collection walks every object the process holds, and the ~300,000 of torch, gradio, the page and the
    # models live as long as this process, which only serves: frozen, they are walked no more (a class's burst of
    # inputs paid ~0.2 s of the CPU for each full collection, two or three per burst).
    gc.collect()
    gc.freeze()
    before = install_training_stop() if training.enabled else None
    if before is not None:
        bound = (f"each stops after {args.max_training_minutes:g} minutes" if args.max_training_minutes else
                 "no time bound (--max-training-minutes 0)")
        print(f"bertviz-app: fine-tuning is on ({bound}); `kill -USR1 {os.getpid()}` stops the training under way",
              flush=True)
    try:
        app.serve(demo, host=args.host, port=args.port, share=args.share, auth=auth, max_sessions=args.max_sessions,
                  session_idle_s=args.session_minutes * 60, sessions_per_address=args.sessions_per_address,
                  behind_proxy=args.behind_proxy)
    finally:
        if before is not None:
            signal.signal(signal.SIGUSR1, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
