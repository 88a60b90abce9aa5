"""`export_static`: a folder that any static host, or a USB stick opened from file://, serves as the whole page.

    index.html            the page: input, the views, fill-mask, next sentence, link, presenter mode
    views.js, page.js     our JavaScript as two classic scripts (the views' bundle; the page's glue, its tokenizer
                          and the views' data it makes, from static/js)
    runtime/              onnxruntime-web's classic-script API and its MIT license
    data/manifest.js      the model's sizes and score terms' names, the tokenizer's vocabulary and settings, the parts
                          below
    lessons/NAME.js       a lesson (`--lesson FILE`, made in the app), as a classic script the page plays
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
import html
import json
import re
import shutil
from pathlib import Path

from .. import limits
from ..views.page import _script_text, bundle_js, inline_modules
from ..views.payload import SCORE_TERMS_MAX_VALUES
from . import runtime
from .onnx_export import WEIGHTS, ExportError, export_onnx, require_heads, score_scale, score_term_names

JS_DIR = Path(__file__).resolve().parent / "js"
PART_BYTES = 4 << 20
PRECOMPRESS_MIN_BYTES = 32 << 10  # smaller files gain a few hundred bytes from a copy: not worth a file
NEEDS_SERVER = ("Integrated gradients and blank-out, silencing heads, comparing two inputs or two models, the "
                "embeddings and hidden-state tabs, and fine-tuning need the server: get the bertviz-app project's "
                "source and run `make app` in it (its README says more).")


def page_js() -> str:
    """The page's own modules (static/js) as one classic script defining `window.BertvizStatic`."""
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(JS_DIR.glob("*.mjs"))}
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


def _write_lesson(folder: Path, lesson: str | Path) -> str:
    name, value = read_lesson(lesson)
    lessons = folder / "lessons"
    lessons.mkdir()
    # Inside a <script src>, JSON is a JavaScript literal; "</script" cannot end anything in a file of its own.
    text = json.dumps(value, ensure_ascii=True)
    (lessons / f"{name}.js").write_text(f"window.bertvizLessons = window.bertvizLessons || {{}};\n"
                                        f"window.bertvizLessons[{json.dumps(name)}] = {text};\n", encoding="ascii")
    return name


def export_static(folder: str | Path, model, tokenizer, name: str, example: tuple[str, str] | None = None,
                  lesson: str | Path | None = None, weights: str = WEIGHTS[0]) -> Path:
    """Write the static page of `model` (a BertForPreTraining with both heads) and `tokenizer` into `folder`
    (created; files of an earlier export there are replaced), with the lesson file `lesson` if given (the page's
    Lesson button plays it; `?lesson=NAME&step=N` opens a step), its weights stored as `weights` (one of
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
        "lessons": [_write_lesson(folder, lesson)] if lesson is not None else [],
    }
    (data / "manifest.js").write_text(
        f"window.bertvizManifest = {json.dumps(manifest, ensure_ascii=True, separators=(',', ':'))};\n",
        encoding="ascii")
    (folder / "views.js").write_text(bundle_js(), encoding="utf-8")
    (folder / "page.js").write_text(page_js(), encoding="utf-8")
    a, b = example or ("The cat sat on the mat.", "It was tired.")
    (folder / "index.html").write_text(index_html(name, a, b), encoding="utf-8")
    for old in ("views.js.gz", "views.js.br", "page.js.gz", "page.js.br"):  # an earlier export's copies
        (folder / old).unlink(missing_ok=True)
    precompress(folder, ["views.js", "page.js", "data/manifest.js", "runtime/ort.wasm.min.js",
                         *(spec["path"] for spec in files.values())])
    return folder


_CSS = """
html, body { margin: 0; background: #fff; color: #222; font: 15px system-ui, -apple-system, "Segoe UI", Roboto,
  Arial, sans-serif; }
body { padding: 10px 16px; }
h1 { font-size: 20px; margin: 0 0 6px; }
#input-row { display: flex; gap: 8px; flex-wrap: wrap; align-items: end; }
#input-row label { display: flex; flex-direction: column; font-size: 13px; flex: 1 1 260px; }
#input-row input[type=text] { font-size: 15px; padding: 5px 6px; }
button { font-size: 14px; padding: 5px 10px; cursor: pointer; }
#load-note { font-size: 13px; color: #444; margin: 6px 0; }
#load-progress { width: 240px; }
.error { color: #a50f15; }
#link-out { width: 100%; font-size: 12px; }
section.extra input[type=text] { max-width: 100%; box-sizing: border-box; }
section.extra { border-top: 1px solid #ddd; margin-top: 14px; padding-top: 6px; }
section.extra h2 { font-size: 16px; margin: 4px 0; }
#server-note { font-size: 13px; color: #555; margin-top: 16px; }
/* presenter mode, as the app's: the input in one line of large type without labels, the views' controls in one row
   (page.mjs folds the rest under "More options"), no caption (the presenter says it), token labels that grow with
   their rows up to 28 px (--bv-label-max, read by the views). No page zoom: the views measure the window in CSS
   pixels, and a zoomed #views pushed a 25-token matrix past the bottom of a 1280 x 720 screen. */
body.bv-presenter { padding-top: 4px; }
body.bv-presenter h1, body.bv-presenter #server-note, body.bv-presenter section.extra, body.bv-presenter #load-note,
body.bv-presenter #load-progress, body.bv-presenter #link-out, body.bv-presenter #input-error:empty,
body.bv-presenter #truncated:empty { display: none; }
body.bv-presenter #input-row { flex-wrap: nowrap; margin-bottom: 6px; }
body.bv-presenter #input-row label { font-size: 0; flex: 1 1 0; min-width: 0; }
body.bv-presenter #input-row input[type=text] { font-size: 20px; }
body.bv-presenter #views .bv-root { --bv-label-max: 28px; --bv-room-below: 12px; --bv-fill-width: 1; }
body.bv-presenter #views .bv-caption { display: none; }
body.bv-presenter #views .bv-more > summary { display: list-item; cursor: pointer; color: #08306b; font-weight: 600; }
body.bv-presenter #views .bv-more:not([open]) { flex-basis: auto; }
body.bv-presenter #views .bv-controls input[type=range] { width: 70px; min-width: 60px; }
.bv-lesson { border: 1px solid #c6dbef; background: #f4f8fc; padding: 4px 8px; margin: 6px 0; }
.bv-lesson-row { display: flex; gap: 8px; align-items: center; }
.bv-lesson-row button { white-space: nowrap; flex: none; }
#lesson-where { font-weight: 600; flex: 1 1 auto; }
.bv-lesson-caption { margin: 4px 0; font-size: 17px; white-space: pre-wrap; }
.bv-lesson-caption:empty, .bv-lesson-problem:empty { display: none; }
.bv-lesson-problem { margin: 2px 0; color: #a50f15; }
body.bv-presenter .bv-lesson-caption { font-size: 24px; }
#projector-theme[aria-pressed=true]::before, #colorblind-theme[aria-pressed=true]::before { content: "\\2713\\00a0"; font-weight: 700; }
.bv-keys { border: 1px solid #9ecae1; background: #fff; padding: 6px 10px; margin: 6px 0; max-width: 560px; }
.bv-keys th { text-align: left; padding: 2px 12px 2px 0; white-space: nowrap; }
@media (max-width: 700px) { body.bv-presenter #input-row { flex-wrap: wrap; }
  body.bv-presenter #input-row label { flex-basis: 100%; } }
"""


def index_html(name: str, a: str, b: str) -> str:
    esc = html.escape
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>BERT attention, in your browser: {esc(name)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>BERT attention, computed in this page <small>({esc(name)})</small></h1>
<div id="input-row">
  <label>Sentence A <input type="text" id="text-a" value="{esc(a, quote=True)}"></label>
  <label>Sentence B (optional) <input type="text" id="text-b" value="{esc(b, quote=True)}"></label>
  <button type="button" id="analyze">Analyze</button>
  <button type="button" id="copy-link" title="An address that reopens this input and view">Copy link</button>
  <button type="button" id="presenter">Presenter mode</button>
  <button type="button" id="projector-theme" aria-pressed="false"
    title="High contrast and large labels for a classroom projector">Projector theme</button>
  <button type="button" id="colorblind-theme" aria-pressed="false"
    title="Colours told apart in every common colour-vision deficiency">Colour-blind safe</button>
  <button type="button" id="lesson-open" title="Play the lesson this folder carries (arrow keys step)" hidden>Lesson</button>
  <button type="button" id="keys" title="The keyboard shortcuts">Keys</button>
</div>
<input type="text" id="link-out" readonly hidden>
<p id="load-note" role="status">Loading\u2026</p>
<progress id="load-progress" value="0" max="1"></progress>
<p id="input-error" class="error" role="alert"></p>
<p id="truncated"></p>
<div id="lesson-place"></div>
<div id="views"></div>
<section class="extra" id="fill-mask">
  <h2>Fill the mask</h2>
  <input type="text" id="fill-text" size="60" value="The capital of France is [MASK]."
    aria-label="A sentence with [MASK] where a word is missing">
  <button type="button" id="fill">Predict</button>
  <ol id="fill-out"></ol>
</section>
<section class="extra" id="next-sentence">
  <h2>Next sentence</h2>
  <input type="text" id="nsp-a" size="40" value="He opened the door." aria-label="Sentence A">
  <input type="text" id="nsp-b" size="40" value="The room was dark." aria-label="Sentence B">
  <button type="button" id="nsp">Does B follow A?</button>
  <p id="nsp-out"></p>
</section>
<p id="server-note">{esc(NEEDS_SERVER)}</p>
<script src="views.js"></script>
<script src="runtime/ort.wasm.min.js"></script>
<script src="data/manifest.js"></script>
<script src="page.js"></script>
<script>{_script_text("BertvizStatic.start(document);")}</script>
</body>
</html>
"""
