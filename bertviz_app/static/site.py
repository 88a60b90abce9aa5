"""`export_static`: a folder that any static host, or a USB stick opened from file://, serves as the whole page.

    index.html            the page: input, the views, fill-mask, next sentence, link, presenter mode
    views.js, page.js     our JavaScript as two classic scripts (the views' bundle; the page's glue, its tokenizer
                          and the views' data it makes, from static/js)
    runtime/              onnxruntime-web's classic-script API and its MIT license
    data/manifest.js      the model's sizes and score terms' names, the tokenizer's vocabulary and settings, the parts
                          below
    lessons/NAME.js       a lesson as a classic script the page plays: the shipped ones (bertviz_app.lessons, unless
                          `shipped_lessons=False`) and one made in the app (`--lesson FILE`)
    data/model.onnx       the ONNX graph (onnx_export.py; its weights as `weights` says), and runtime/ort-wasm-simd-
    runtime/ort-wasm-*    threaded.wasm and .mjs, the WebAssembly binary and its JavaScript glue: what a page served
                          over http(s) fetches, as binary files
    *.gz, *.br            precompressed copies of the large files a page served over http(s) reads, for a host that
                          serves them (nginx's gzip_static, Caddy's precompressed); .br only where the `brotli`
                          module is installed and it is 5% smaller than the .gz (float16 weights hardly compress)
    data/model-NN.js,     the same three files again, as base64 in parts of 4 MiB, each a classic script: what a page
    data/wasm-NN.js,      opened from the disk (file://) reads, since it may not fetch anything, only run <script src>
    data/glue-NN.js       of its folder

The page picks by its address: over http(s) the binary files (a third less to send than base64, which a host's gzip
cannot win back, and kept in the browser's cache for the next visit), from file:// the parts. Measured in the
docs/guide/static-page.md, "The static page over the wire".
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import functools
import html
import json
import re
import shutil
from pathlib import Path

from .. import lessons as course, limits
from ..styles import stylesheet
from ..views.page import JS_DIR as VIEWS_JS_DIR, bundle_js, inline_modules
from ..views.payload import SCORE_TERMS_MAX_VALUES
from . import runtime
from .onnx_export import WEIGHTS, ExportError, export_onnx, require_heads, score_scale, score_term_names

HERE = Path(__file__).resolve().parent
JS_DIR = HERE / "js"
PART_BYTES = 4 << 20
PRECOMPRESS_MIN_BYTES = 32 << 10  # smaller files gain a few hundred bytes from a copy: not worth a file
NEEDS_SERVER = ("Integrated gradients and blank-out, silencing heads, comparing two inputs or two models, the "
                "embeddings and hidden-state tabs, and fine-tuning need the server: get the bertviz-app project's "
                "source and run `make app` in it (its README says more).")


def page_js() -> str:
    """The page's own modules (static/js), and the heads' vocabulary they share with the views, as one classic script
    defining `window.BertvizStatic`."""
    files = [*sorted(JS_DIR.glob("*.mjs")), *(VIEWS_JS_DIR / name for name in ("heads.mjs", "i18n.mjs", "catalog-es.mjs"))]
    sources = {p.name: p.read_text(encoding="utf-8") for p in files}
    return inline_modules(sources, "page.mjs", "BertvizStatic")


def _write_file(site: Path, path: str, name: str, data: bytes) -> dict:
    """`data` twice: as the binary file `path` of `site` (fetched over http), and as base64 parts data/NAME-NN.js
    (read from file://). What the manifest says of it: its parts, bytes, path and a version of its contents, which
    the page puts in the address it fetches, so that a browser's cache never hands an earlier export's file."""
    (site / path).write_bytes(data)
    count = max(1, -(-len(data) // PART_BYTES))
    for i in range(count):
        text = base64.b64encode(data[i * PART_BYTES:(i + 1) * PART_BYTES]).decode("ascii")
        (site / "data" / f"{name}-{i:02d}.js").write_text(f'bertvizStatic.part("{name}",{i},"{text}");\n',
                                                         encoding="ascii")
    return {"parts": count, "bytes": len(data), "path": path, "version": hashlib.sha256(data).hexdigest()[:16]}


def precompress(site: Path, paths) -> list[str]:
    """A .gz copy (and a .br one where the `brotli` module is installed and that copy is 5% smaller than the .gz)
    beside each of `paths` (relative to `site`) of at least PRECOMPRESS_MIN_BYTES; the copies' paths."""
    try:
        import brotli  # gradio installs it; no dependency of ours
    except ImportError:
        brotli = None
    written = []
    for path in paths:
        data = (site / path).read_bytes()
        if len(data) < PRECOMPRESS_MIN_BYTES:
            continue
        gz = gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same export gives the same bytes
        copies = {".gz": gz}
        if brotli is not None:
            br = brotli.compress(data, quality=9)  # 11 gains 12% on the runtime and costs a minute
            if len(br) <= 0.95 * len(gz):
                copies[".br"] = br
        for suffix, packed in copies.items():
            (site / f"{path}{suffix}").write_bytes(packed)
            written.append(f"{path}{suffix}")
    return written


def _tokenizer_settings(tokenizer) -> dict:
    vocab = [""] * tokenizer.vocab_size
    for token, index in tokenizer.vocab.items():
        vocab[index] = token
    model = tokenizer._wordpiece.model
    return {"vocab": vocab, "lowercase": tokenizer.do_lower_case, "stripAccents": tokenizer.strip_accents,
            "chineseChars": tokenizer.tokenize_chinese_chars, "unkToken": model.unk_token,
            "prefix": model.continuing_subword_prefix, "maxInputCharsPerWord": model.max_input_chars_per_word}


MAX_LESSON_BYTES = 2 << 20


def read_lesson(path: str | Path) -> tuple[str, object]:
    """A lesson file (the app's Lesson bar saves one) as (its name for links, from the file name; its JSON value).
    Raises ExportError in a sentence for a file that is not a lesson; each step is checked by the page that plays it
    (views/js/lesson.mjs), so the app and the page refuse the same steps in the same words."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_LESSON_BYTES:
            raise ExportError(f"{path} is over {MAX_LESSON_BYTES >> 20} MB: a lesson file is a few kB of JSON.")
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ExportError(f"{path} is not a lesson file (JSON saved from the app's Lesson bar): {err}") from None
    steps = value if isinstance(value, list) else value.get("steps") if isinstance(value, dict) else None
    if not isinstance(steps, list) or not steps:
        raise ExportError(f'{path} is not a lesson file: it has no list of "steps".')
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", path.stem).strip("-")[:64] or "lesson"  # lesson.mjs nameFromFile
    return name, value


def _write_lesson(lessons: Path, name: str, value: object) -> None:
    # Inside a <script src>, JSON is a JavaScript literal; "</script" cannot end anything in a file of its own.
    text = json.dumps(value, ensure_ascii=True)
    (lessons / f"{name}.js").write_text(f"window.bertvizLessons = window.bertvizLessons || {{}};\n"
                                        f"window.bertvizLessons[{json.dumps(name)}] = {text};\n", encoding="ascii")


def _write_lessons(folder: Path, lesson: str | Path | None, shipped: bool) -> list[dict]:
    """The lessons of the page's folder (the shipped ones, then `lesson`, which replaces a shipped one of its name),
    as the Lesson list's cards."""
    values = {name: course.for_browsers(value) for name, value in course.shipped_lessons().items()} if shipped else {}
    if lesson is not None:
        name, value = read_lesson(lesson)
        values[name] = value
    if values:
        (folder / "lessons").mkdir()
    for name, value in values.items():
        _write_lesson(folder / "lessons", name, value)
    return [course.lesson_card(name, {"steps": value} if isinstance(value, list) else value)
            for name, value in values.items()]


def export_static(folder: str | Path, model, tokenizer, name: str, example: tuple[str, str] | None = None,
                  lesson: str | Path | None = None, weights: str = WEIGHTS[0], shipped_lessons: bool = True) -> Path:
    """Write the static page of `model` (a BertForPreTraining with both heads) and `tokenizer` into `folder`
    (created; files of an earlier export there are replaced), with the shipped lessons (unless `shipped_lessons` is
    false) and the lesson file `lesson` if given (the page's Lesson button lists them; `?lesson=NAME&step=N` opens a
    step), its weights stored as `weights` (one of
    onnx_export.WEIGHTS: float16, the default, is exact for the shipped model; int8 is smaller and not faithful).
    Returns the folder."""
    if weights not in WEIGHTS:
        raise ExportError(f"weights {weights!r} is not one of {', '.join(WEIGHTS)}")
    if lesson is not None:
        read_lesson(lesson)  # a bad lesson file fails before the slow export
    ort_dir = runtime.runtime_dir()  # before the slow export: a missing runtime or head fails at once
    require_heads(model)
    folder = Path(folder)
    data = folder / "data"
    # an earlier export's lesson and runtime go too: its links would still open the lesson, and a copy left beside
    # a file (a .br) would be served instead of it
    for old in (data, folder / "lessons", folder / "runtime"):
        if old.exists():
            shutil.rmtree(old)
    data.mkdir(parents=True)
    (folder / "runtime").mkdir()
    onnx_path = export_onnx(model, data / "model.onnx", weights=weights)
    files = {"model": _write_file(folder, "data/model.onnx", "model", onnx_path.read_bytes())}
    for key, f in (("wasm", "ort-wasm-simd-threaded.wasm"), ("glue", "ort-wasm-simd-threaded.mjs")):
        files[key] = _write_file(folder, f"runtime/{f}", key, (ort_dir / f).read_bytes())
    for f in ("ort.wasm.min.js", "LICENSE"):
        shutil.copyfile(ort_dir / f, folder / "runtime" / f)
    c = model.config
    manifest = {
        "model": {"name": name, "layers": c.num_hidden_layers, "heads": c.num_attention_heads,
                  "headSize": c.head_dim, "hidden": c.hidden_size, "maxTokens": c.max_tokens,
                  # the graph's score_terms, named as the model names them, and the server's cap on them
                  "scoreTerms": score_term_names(model), "scoreScale": score_scale(model),
                  "scoreTermsMaxValues": SCORE_TERMS_MAX_VALUES, "maxMasks": limits.MAX_MASKS, "weights": weights},
        "files": files, "tokenizer": _tokenizer_settings(tokenizer),
        "runtime": {"name": runtime.PACKAGE, "version": runtime.VERSION, "license": runtime.LICENSE},
        "lessons": _write_lessons(folder, lesson, shipped_lessons),
    }
    (data / "manifest.js").write_text(
        f"window.bertvizManifest = {json.dumps(manifest, ensure_ascii=True, separators=(',', ':'))};\n",
        encoding="ascii")
    (folder / "views.js").write_text(bundle_js("static"), encoding="utf-8")
    (folder / "page.js").write_text(page_js(), encoding="utf-8")
    a, b = example or ("The cat sat on the mat.", "It was tired.")
    (folder / "index.html").write_text(index_html(name, a, b), encoding="utf-8")
    for old in ("views.js.gz", "views.js.br", "page.js.gz", "page.js.br"):  # an earlier export's copies
        (folder / old).unlink(missing_ok=True)
    precompress(folder, ["views.js", "page.js", "data/manifest.js", "runtime/ort.wasm.min.js",
                         *(spec["path"] for spec in files.values())])
    return folder


@functools.cache
def page_template() -> str:
    """index.html with {name}, {a}, {b}, {css} (the page's own stylesheet, inline: the page opens from file:// too) and
    {needs_server} to fill (static/index.html)."""
    return (HERE / "index.html").read_text(encoding="utf-8")


def index_html(name: str, a: str, b: str) -> str:
    esc = html.escape
    return page_template().format(name=esc(name), a=esc(a, quote=True), b=esc(b, quote=True), css=stylesheet("base.css") + stylesheet("page.css"),
                                  needs_server=esc(NEEDS_SERVER))
