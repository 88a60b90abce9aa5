"""Our JavaScript as one script, and the pages that carry it: a standalone HTML file and a notebook output.

The views are ES modules in js/ (node's tests import them as they are). Each page gets them as ONE classic script
that defines `window.BertvizViews`, made of the modules its entries reach (BUNDLES: an offline page of one input
carries the views, the app its hosts too), by a tiny inliner: each module becomes a function scope whose exports
are returned as an object, and each `import {a, b as c} from "./x.mjs"` becomes `const {a, b: c} = <x's object>`.
It understands only what our modules use (named and namespace imports of sibling files, or of a file elsewhere
in the package, known by its file name: static/js reads views/js/heads.mjs; `export function`,
`export async function`, `export const|let|class`) and refuses anything else, so a new construct fails a test
instead of producing a broken bundle. The stylesheets (bertviz_app/styles/) that the modules name in an
`addStylesheet(root, "views.css", ...)` call travel in the script as `__bvStylesheets`, so a page carries the CSS of what
it draws. The output is deterministic: the same sources give the same bytes.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import i18n
from ..styles import stylesheet
from .payload import decode_payload

JS_DIR = Path(__file__).resolve().parent / "js"
GLOBAL = "BertvizViews"
# Each page's entries: `BertvizViews` holds their exports. main.mjs is the views (mount, mountPage, decode, permalink,
# theme); a page adds the hosts it calls, so that an offline page of one input carries no corpus, lesson or timeline
# code (tests/test_views.py weighs it).
BUNDLES = {"page": ("main.mjs",),  # a Run's offline page and notebook output
           "static": ("main.mjs", "lesson-host.mjs"),  # the page that runs the model itself (static/site.py)
           "widget": ("main.mjs", "widget-host.mjs"),  # run.widget()'s anywidget (widget.py)
           "corpus": ("corpus-host.mjs",),  # a corpus's offline page (corpus_page.py)
           "app": ("main.mjs", "lesson-host.mjs", "app.mjs")}  # the Gradio app's page head

_IMPORT = re.compile(r'^import\s+(?:\{([^}]*)\}|\*\s+as\s+(\w+))\s+from\s+"(?:\./|(?:\.\./)+[\w/-]*/)([\w.-]+\.mjs)";[ \t]*$',
                     re.M)
_STYLESHEETS = re.compile(r"(?<!function )\baddStylesheet\((.*?)\);", re.S)
_EXPORT = re.compile(r"^export\s+(?:async\s+)?(function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)", re.M)


class BundleError(ValueError):
    """A module uses a construct the inliner does not support."""


def _module_var(name: str) -> str:
    return "__bv_" + re.sub(r"\W", "_", name.removesuffix(".mjs"))


def _transform(name: str, source: str) -> tuple[str, list[str]]:
    """One module as `const __bv_x = (() => { ... return {exports}; })();`, and the modules it imports."""
    deps: list[str] = []

    def replace_import(match: re.Match) -> str:
        names, namespace, target = match.groups()
        deps.append(target)
        if namespace:
            return f"const {namespace} = {_module_var(target)};"
        parts = []
        for item in names.split(","):
            item = item.strip()
            if not item:
                continue
            m = re.fullmatch(r"([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?", item)
            if not m:
                raise BundleError(f"{name}: cannot inline the import {item!r}")
            parts.append(m.group(1) if not m.group(2) else f"{m.group(1)}: {m.group(2)}")
        return f"const {{ {', '.join(parts)} }} = {_module_var(target)};"

    body = _IMPORT.sub(replace_import, source)
    leftover = re.search(r"^\s*import\b.*$", body, re.M)
    if leftover:
        raise BundleError(f"{name}: unsupported import {leftover.group(0).strip()!r}")
    exports = [m.group(2) for m in _EXPORT.finditer(body)]
    body = _EXPORT.sub(lambda m: m.group(0).removeprefix("export").lstrip(), body)
    leftover = re.search(r"^\s*export\b.*$", body, re.M)
    if leftover:
        raise BundleError(f"{name}: unsupported export {leftover.group(0).strip()!r}")
    wrapped = (f"// ---- {name}\nconst {_module_var(name)} = (() => {{\n{body.rstrip()}\n"
               f"return {{ {', '.join(exports)} }};\n}})();\n")
    return wrapped, deps


def inline_modules(sources: dict[str, str], entry: str | tuple[str, ...], global_name: str = GLOBAL) -> str:
    """Bundle `sources` (file name -> text) reachable from `entry` (one file name, or several) into one classic script
    that assigns the entries' exports to `globalThis[global_name]`. Modules come in dependency order (imports first,
    ties by name), each once."""
    entries = (entry,) if isinstance(entry, str) else tuple(entry)
    catalogues = {path.name for path in i18n.CATALOGUE_FILES.values()}
    sources = {name: i18n.for_pages(code) if name in catalogues else code for name, code in sources.items()}
    done: dict[str, str] = {}
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise BundleError(f"import cycle through {name}")
        if name not in sources:
            raise BundleError(f"missing module {name}")
        visiting.add(name)
        code, deps = _transform(name, sources[name])
        for dep in sorted(set(deps)):
            visit(dep)
        visiting.discard(name)
        done[name] = code

    for name in entries:
        visit(name)
    exports = ", ".join(f"...{_module_var(name)}" for name in entries)
    named = sorted({css for name in done for call in _STYLESHEETS.findall(sources[name])
                    for css in re.findall(r'"([\w-]+\.css)"', call)})
    sheets = f"const __bvStylesheets = {json.dumps({css: stylesheet(css) for css in named})};\n" if named else ""
    return ("/* bertviz-app attention views: generated from bertviz_app/views/js by page.py; edit the modules. */\n"
            "(function () {\n\"use strict\";\n" + sheets + "".join(done.values())
            + f"globalThis.{global_name} = {{ {exports} }};\n}})();\n")


@lru_cache(maxsize=None)
def bundle_js(page: str = "app") -> str:
    """The views as one classic script defining `window.BertvizViews`, with the entries of `page` (a name of BUNDLES;
    "app": the views and every host of the app, see main.mjs and app.mjs)."""
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(JS_DIR.glob("*.mjs"))}
    return inline_modules(sources, BUNDLES[page])


def script_element() -> str:
    """The app's script as one <script> element for a page's <head>: the app loads it once, however many views it
    holds, then calls `BertvizViews.gradioHost`."""
    return f"<script>{_script_text(bundle_js('app'))}</script>"


def _script_text(code: str) -> str:
    # Inside <script>, only "</script" (any case) and "<!--" can end or confuse the element.
    return re.sub(r"</(script)", r"<\\/\1", code, flags=re.I).replace("<!--", "<\\!--")


def _b64(blob: bytes | str | None) -> str:
    if blob is None:
        return ""
    return blob if isinstance(blob, str) else base64.b64encode(bytes(blob)).decode("ascii")


_REGISTRY_LIST = re.compile(r"^export const VIEWS = \[\n(.*?)^\];", re.M | re.S)
_REGISTRY_LINE = re.compile(r'\{ name: "(\w+)", url: "(\w+)", label: "(?:[^"\\]|\\.)*", scope: "(?:head|query|all)", '
                            r'module: \w+ \},')


def view_names(js_dir: Path = JS_DIR) -> dict[str, str]:
    """The views of js/registry.mjs, the one list of them: url name (a permalink's tab=, Python's view=) ->
    name in JavaScript, in the order of their tabs. A line of its list that is not one view fails here."""
    source = (js_dir / "registry.mjs").read_text(encoding="utf-8")
    found = _REGISTRY_LIST.search(source)
    if not found:
        raise BundleError("registry.mjs: no `export const VIEWS = [` list")
    names = {}
    for line in filter(None, (line.strip() for line in found.group(1).splitlines())):
        entry = _REGISTRY_LINE.fullmatch(line)
        if not entry:
            raise BundleError(f"registry.mjs: cannot read the view line {line!r}")
        names[entry.group(2)] = entry.group(1)
    return names


VIEW_NAMES = view_names()


def _initial_view(view: str | None) -> str | None:
    """The JavaScript name of a view given by its url name (registry.mjs), or None for the default."""
    if view is None:
        return None
    if view not in VIEW_NAMES:
        raise ValueError(f"unknown view {view!r}; choose one of {', '.join(VIEW_NAMES)}")
    return VIEW_NAMES[view]


def standalone_html(payload: bytes, query_key: bytes | None = None, title: str = "BERT attention",
                    view: str | None = None) -> str:
    """A self-contained page of the views: script, styles and data inline, no network at all, works from
    file://. The data travels as base64 in inert <script type="application/octet-stream"> elements. view: the view
    shown first, by its url name in js/registry.mjs ('lines', 'matrix', 'overview' or 'query_key'; default lines)."""
    qk = _b64(query_key)
    start = _initial_view(view)
    options = (f"<script type=\"application/json\" id=\"bertviz-options\">"
               f"{json.dumps({'selection': {'view': start}})}</script>\n") if start else ""
    data = (f"<script type=\"application/octet-stream\" id=\"bertviz-payload\">{_b64(payload)}</script>\n"
            + (f"<script type=\"application/octet-stream\" id=\"bertviz-query-key\">{qk}</script>\n" if qk else "")
            + options)
    return page_html(title, data, f"{GLOBAL}.mountPage().catch(function (e) {{ console.error(e); }});")


def page_html(title: str, data: str, start: str, bundle: str = "page") -> str:
    """The one shape of an offline page: the bundle of `bundle` (a name of BUNDLES) inline after `data` (inert script
    elements the page reads), then `start`, the line that mounts it."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{stylesheet('base.css')}</style>\n"
        "</head>\n<body>\n<div id=\"bertviz-root\"></div>\n"
        + data
        + f"<script>{_script_text(bundle_js(bundle))}</script>\n"
        f"<script>{start}</script>\n"
        "</body>\n</html>\n")


# hides the static picture that follows a notebook output's frame wherever <style> is not removed (notebook_html)
NOTEBOOK_STYLE = f"<style>{stylesheet('notebook.css').strip()}</style>"


def notebook_html(payload: bytes, query_key: bytes | None = None, title: str = "BERT attention",
                  height: int = 760, view: str | None = None) -> str:
    """The standalone page inside an <iframe srcdoc>: each output is its own document, so several outputs in one
    notebook cannot clash on ids or styles, and no front end's require.js or CSP for inline modules is involved.
    The sandbox allows scripts and downloads (the export buttons) but gives the frame no access to the notebook.

    A notebook JupyterLab does not trust (run elsewhere, or received) shows its outputs through a sanitizer that
    removes iframes and <style> elements but keeps images and text: for it a static picture of every head follows
    the frame, with how to get the interactive views. Everywhere else the <style> before it hides it."""
    page = standalone_html(payload, query_key, title, view)
    image, caption = static_picture(payload)
    return (f"<div class=\"bertviz-output\">{NOTEBOOK_STYLE}"
            f"<iframe srcdoc=\"{html.escape(page, quote=True)}\" title=\"{html.escape(title, quote=True)}\" "
            f"sandbox=\"allow-scripts allow-downloads\" style=\"width: 100%; height: {int(height)}px; border: 0;\">"
            "</iframe>"
            "<div class=\"bertviz-static\"><p><b>A static picture of the attention views.</b> This notebook is not "
            "trusted, so its interactive views are not drawn: run this cell again, or trust the notebook (JupyterLab: "
            "the command palette's <i>Trust Notebook</i>).</p>"
            f"<img src=\"data:image/png;base64,{base64.b64encode(image).decode('ascii')}\" "
            f"alt=\"{html.escape(caption, quote=True)}\" style=\"max-width: 100%; image-rendering: pixelated;\">"
            f"<p>{html.escape(caption)}</p></div></div>")


def static_picture(payload: bytes, width: int = 720, gap: int = 4) -> tuple[bytes, str]:
    """(PNG, caption) of every head of a payload as a grid of thumbnails (rows: layers, columns: heads), each its
    attention matrix on the views' square-root scale, about `width` pixels wide: a picture that needs no script."""
    decoded = decode_payload(payload)
    attention = decoded.values("attention")  # (L, h, T, T)
    layers, heads, n = attention.shape[0], attention.shape[1], attention.shape[-1]
    tile = min(max(width // heads - gap, 24), 160)
    if n <= tile:  # each token a square of whole pixels
        size = n * max(1, tile // n)
        thumbs = np.repeat(np.repeat(attention, size // n, axis=-1), size // n, axis=-2)
    else:  # blocks of tokens averaged to one pixel
        size = tile
        edges = np.linspace(0, n, tile + 1).astype(int)[:-1]
        thumbs = np.add.reduceat(np.add.reduceat(attention, edges, axis=-1), edges, axis=-2)
        thumbs /= np.maximum(thumbs.max(axis=(-2, -1), keepdims=True), 1e-12)
    shade = np.sqrt(np.clip(thumbs, 0.0, 1.0))  # (L, h, size, size)
    pitch = size + gap
    grid = np.zeros((layers * pitch - gap, heads * pitch - gap), dtype=np.float32)
    for layer in range(layers):
        for head in range(heads):
            grid[layer * pitch:layer * pitch + size, head * pitch:head * pitch + size] = shade[layer, head]
    white, ink = np.array([255.0, 255.0, 255.0]), np.array([8.0, 48.0, 107.0])  # the views' darkest blue
    rgb = (white + grid[..., None] * (ink - white)).round().astype(np.uint8)
    tokens = decoded.header["tokens"]
    shown = " ".join(tokens[:60]) + (" …" if len(tokens) > 60 else "")
    caption = (f"Every head: {layers} layers (rows, 0 at the top) x {heads} heads (columns, 0 at the left); each tile "
               f"is one head's attention over the {n} tokens (attending token down, attended token across; darker is "
               f"more). Tokens: {shown}")
    return _png(rgb), caption


def _png(rgb: np.ndarray) -> bytes:
    """An (H, W, 3) uint8 image as PNG bytes (no imaging library needed)."""
    height, width, _ = rgb.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), rgb.reshape(height, width * 3)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
            + chunk(b"IEND", b""))


class NotebookView:
    """Displays itself in Jupyter (and anything that calls `_repr_html_`) as `notebook_html`."""

    def __init__(self, payload: bytes, query_key: bytes | None = None, title: str = "BERT attention",
                 height: int = 760, view: str | None = None):
        _initial_view(view)  # a bad name fails here, not when the notebook draws
        self.payload, self.query_key, self.title, self.height, self.view = payload, query_key, title, height, view

    def _repr_html_(self) -> str:
        return notebook_html(self.payload, self.query_key, self.title, self.height, self.view)

    def save(self, path: str | Path) -> Path:
        """Write the standalone page to `path`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(standalone_html(self.payload, self.query_key, self.title, self.view), encoding="utf-8")
        return path

