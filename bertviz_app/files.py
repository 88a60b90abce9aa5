"""Reading the small text files of a checkpoint folder (config.json, tokenizer files, weight indexes) with a size cap
and strict JSON, so that a hostile or broken file fails at once with a message instead of hanging, filling memory or
escaping as a RecursionError. Each reader takes the error class its caller raises (ConfigError, TokenizerError,
CheckpointError), so the message reaches the user in that module's words."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

# config.json, tokenizer_config.json and weight indexes are kilobytes in every real checkpoint; 16 MiB still holds a
# config.json with an id2label of 100,000 classes (~6 MB).
JSON_LIMIT = 16 * 2**20
# vocab.txt and tokenizer.json grow with the vocabulary, ~8 and ~15 bytes a token for English (all-MiniLM-L6-v2:
# 232 kB and 466 kB for 30,522 tokens); 64 MiB is room for config.py's 1,000,000-token limit in any script.
VOCAB_LIMIT = 64 * 2**20
# The longest token of any tokenizer we know is a few dozen characters (runs of spaces in code models); `tokenizers`
# builds its matchers from the added tokens at ~80x their size (a 60 MB token: 5 GB). Bounded before it parses them.
TOKEN_CHARS = 1000
TOKEN_COUNT = 1_000_000  # config.py's vocabulary limit


def regular_file(path: Path, error: type[Exception]) -> os.stat_result:
    """The stat of `path`, which must be a regular file: opening a FIFO blocks until someone writes, and a device (a
    link to /dev/zero) never ends. Checked before opening."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path} does not exist") from None
    except OSError as err:
        raise error(f"could not read {path} ({err.strerror or type(err).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a pipe" if stat.S_ISFIFO(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device")
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise error(f"{path} is {kind}{link}, not a regular file; put the checkpoint's own {path.name} there")
    return info


def inside(root: Path, path: Path, error: type[Exception], kind: str = "file") -> Path:
    """`path` with every link followed, which must land inside `root` (the folder the operator named, itself
    resolved) and be a regular file (`kind` "file") or a folder ("folder"); `error` otherwise. Every file and folder
    read for a visitor goes through here, so that a link planted in a served folder (input-00.bviz -> /etc/passwd, a
    step folder -> another tree) is refused instead of sent: the rule of nginx's disable_symlinks and Django's
    safe_join. A link that stays inside the folder is followed."""
    base = Path(root).resolve()
    try:
        real = Path(path).resolve(strict=True)
    except FileNotFoundError:
        raise error(f"{path} does not exist") from None
    except (OSError, RuntimeError) as err:  # a loop of links: RuntimeError before Python 3.13, OSError since
        raise error(f"could not read {path} ({getattr(err, 'strerror', None) or type(err).__name__})") from None
    if real != base and base not in real.parents:
        raise error(f"{path} leads out of {root} (a symbolic link to somewhere else): refused; put the file itself "
                    "in the folder")
    if kind == "folder":
        if not real.is_dir():
            raise error(f"{path} is not a folder")
    else:
        regular_file(real, error)
    return real


def read_bytes(root: Path, path: Path, error: type[Exception], limit: int) -> bytes:
    """The bytes of `path`, which must lie inside `root` (`inside`), at most `limit` of them."""
    real = inside(root, path, error)
    big = f"{path} is larger than the {limit / 2**20:g} MiB a {path.name} may have here: refused"
    return _capped(real, real.stat().st_size, path, error, limit, big)


def _capped(real: Path, size: int, path: Path, error: type[Exception], limit: int, big: str) -> bytes:
    """At most `limit` bytes of `real` (`path` as the message names it), `big` when there are more."""
    if size > limit:
        raise error(big)
    try:
        with open(real, "rb") as f:
            data = f.read(limit + 1)  # the file may have grown since stat
    except OSError as err:
        raise error(f"could not read {path} ({err.strerror or type(err).__name__})") from None
    if len(data) > limit:
        raise error(big)
    return data


def read_text(path: Path, error: type[Exception], limit: int) -> str:
    """The UTF-8 text of `path`, at most `limit` bytes; `error` for anything else."""
    data = _capped(path, regular_file(path, error).st_size, path, error, limit, _too_big(path, limit))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path} is not UTF-8 text (byte {err.start} is {data[err.start]:#04x}); put the checkpoint's own "
                    f"{path.name} there") from None


def _too_big(path: Path, limit: int) -> str:
    return (f"{path} is larger than the {limit // 2**20} MiB a {path.name} may have here (real ones are far "
            "smaller); check that it is the checkpoint's own file")


def parse_json(text: str, path: Path, error: type[Exception], what: str = "valid JSON", advice: str = ""):
    """`text` as JSON, refusing what Python's json module lets through but no JSON file should hold: NaN, Infinity,
    numbers that overflow a float. `what` and `advice` word the message: '{path} is not {what} (...); {advice}'."""
    suffix = f"; {advice}" if advice else ""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_short_int)
    except RecursionError:
        raise error(f"{path} is not {what} (it is nested too deeply to read){suffix}") from None
    except ValueError as err:  # JSONDecodeError, or one of the refusals below
        raise error(f"{path} is not {what} ({type(err).__name__}: {str(err)[:200]}){suffix}") from None


def read_json(path: Path, error: type[Exception], limit: int = JSON_LIMIT, what: str = "valid JSON",
              advice: str = ""):
    return parse_json(read_text(path, error, limit), path, error, what, advice)


def read_tokenizer_json(path: Path, error: type[Exception]) -> tuple[str, dict]:
    """(text, parsed) of a `tokenizers` file, its tokens counted and measured before `tokenizers` parses it."""
    text = read_text(path, error, VOCAB_LIMIT)
    spec = parse_json(text, path, error)  # first: a RecursionError or NaN is ours to word
    if not isinstance(spec, dict):
        raise error(f"{path} is not a tokenizer file (it holds a JSON {type(spec).__name__}, not an object)")
    model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
    added = spec.get("added_tokens") if isinstance(spec.get("added_tokens"), list) else []
    vocab = model.get("vocab")
    tokens = ([t.get("content") for t in added if isinstance(t, dict)]
              + (list(vocab) if isinstance(vocab, dict) else
                 [t[0] for t in vocab if isinstance(t, list) and t] if isinstance(vocab, list) else []))
    if len(added) > TOKEN_COUNT or len(tokens) > 2 * TOKEN_COUNT:
        raise error(f"{path} lists {len(tokens):,} tokens, more than the {TOKEN_COUNT:,} a vocabulary may have here")
    longest = max((t for t in tokens if isinstance(t, str)), key=len, default="")
    if len(longest) > TOKEN_CHARS:
        raise error(f"{path} has a token of {len(longest):,} characters (\"{longest[:20]}...\"); real tokens are a "
                    f"few dozen at most and {TOKEN_CHARS:,} is the limit here: check that it is the checkpoint's own "
                    "tokenizer.json")
    return text, spec


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _short_int(text: str) -> int:
    # Python parses up to 4300 digits, and past that fails with advice about sys.set_int_max_str_digits that means
    # nothing to a user; no setting needs 100.
    if len(text) > 100:
        raise ValueError(f"an integer of {len(text)} digits is too long for any setting")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is too large for a number")
    return value
