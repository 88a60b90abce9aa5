"""The corpus views outside the app: one self-contained page (script, styles and data inline; works from file://
with no network) and the same page in a notebook's isolated frame, as page.py does for one sentence's views. The
data is what corpus/browser.py `offline_data` gathers: the corpus's description, the summaries, some heads' details
and maps, and the sentence map; views/js/corpus-host.mjs `mountCorpusPage` draws it with the app's own code."""

from __future__ import annotations

import base64
import html
import json

import numpy as np

from .page import GLOBAL, NOTEBOOK_STYLE, _png, page_html


def _json_script(data: dict) -> str:
    # Inside <script>, "</" could end the element: JSON allows "<\/" for it.
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def corpus_html(data: dict, title: str = "Corpus") -> str:
    """A standalone page of the corpus views for `data` (corpus/browser.py `offline_data`)."""
    return page_html(title, f"<script type=\"application/json\" id=\"bertviz-corpus\">{_json_script(data)}</script>\n",
                     f"try {{ {GLOBAL}.mountCorpusPage(document); }} catch (e) {{ console.error(e); }}", "corpus")


def grid_picture(values: np.ndarray, tile: int = 36, gap: int = 3) -> bytes:
    """A PNG of an (L, h) grid of values in 0..1 (darker: more), for a notebook that runs no script."""
    layers, heads = values.shape
    pitch = tile + gap
    grid = np.zeros((layers * pitch - gap, heads * pitch - gap), np.float32)
    for layer in range(layers):
        for head in range(heads):
            v = values[layer, head]
            grid[layer * pitch:layer * pitch + tile, head * pitch:head * pitch + tile] = 0 if v != v else v
    white, ink = np.array([247.0, 251.0, 255.0]), np.array([8.0, 48.0, 107.0])
    rgb = (white + np.clip(grid, 0, 1)[..., None] * (ink - white)).round().astype(np.uint8)
    return _png(rgb)


def corpus_notebook_html(data: dict, title: str = "Corpus", height: int = 900) -> str:
    """The corpus page inside an <iframe srcdoc> (each output its own document, as page.notebook_html), with a
    static picture of the heads' entropy for a notebook that is not trusted (its sanitizer removes the frame)."""
    page = corpus_html(data, title)
    info, grid = data["info"], data["summaries"]["all"]
    ratio = np.array([np.nan if v is None else v for v in grid["entropy_ratio"]], np.float64)
    image = grid_picture(ratio.reshape(info["layers"], info["heads"]))
    caption = (f"Heads over {info['sentences']:,} sentences of {info['name']}: {info['layers']} layers (rows, 0 at the "
               f"top) x {info['heads']} heads (columns, 0 at the left), each tile the head's attention entropy over a "
               "uniform row's (darker: spread more evenly).")
    return (f"<div class=\"bertviz-output\">{NOTEBOOK_STYLE}"
            f"<iframe srcdoc=\"{html.escape(page, quote=True)}\" title=\"{html.escape(title, quote=True)}\" "
            f"sandbox=\"allow-scripts allow-downloads\" style=\"width: 100%; height: {int(height)}px; border: 0;\">"
            "</iframe>"
            "<div class=\"bertviz-static\"><p><b>A static picture of the corpus's heads.</b> This notebook is not "
            "trusted, so its interactive views are not drawn: run this cell again, or trust the notebook (JupyterLab: "
            "the command palette's <i>Trust Notebook</i>).</p>"
            f"<img src=\"data:image/png;base64,{base64.b64encode(image).decode('ascii')}\" "
            f"alt=\"{html.escape(caption, quote=True)}\" style=\"max-width: 100%;\">"
            f"<p>{html.escape(caption)}</p></div></div>")


class CorpusNotebookView:
    """Displays itself in Jupyter as `corpus_notebook_html`; `save(path)` writes the standalone page."""

    def __init__(self, data: dict, title: str = "Corpus", height: int = 900):
        self.data, self.title, self.height = data, title, height

    def _repr_html_(self) -> str:
        return corpus_notebook_html(self.data, self.title, self.height)

    def save(self, path):
        from pathlib import Path
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(corpus_html(self.data, self.title), encoding="utf-8")
        return path
