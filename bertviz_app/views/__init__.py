"""The interactive attention views: one compact binary payload per analysis (payload.py), drawn in the browser
by our own JavaScript (js/: lines, matrix, overview of all heads, query/key arithmetic, one shared selection),
the same script for the app, a notebook and an offline page (page.py).

    from bertviz_app import load
    from bertviz_app.views import standalone_html, NotebookView

    run = load(device="cpu").run("The cat sat on the mat.", "It was tired.")
    Path("attention.html").write_text(standalone_html(run.views_payload(), run.query_key_payload()))
    NotebookView(run.views_payload(), run.query_key_payload())   # as the last line of a notebook cell

The payload builders take arrays (`encode_payload`, `encode_query_key`), never a Run: a Run calls them.

A host page (the Gradio app) loads `bundle_js()` once (`script_element()` in its head) and calls `BertvizViews.mount(element, payload, options)`;
see js/main.mjs for the options (the query/key blob can be handed over later).
"""

from .page import NotebookView, bundle_js, notebook_html, script_element, standalone_html
from .payload import (SCORE_TERMS_MAX_VALUES, VALUE_WEIGHTED_MAX_TOKENS, PayloadError, check_blob, decode,
                      decode_payload, decode_query_key, encode_payload, encode_query_key, input_text, input_title,
                      run_key, wordpiece_word_ids)

__all__ = ["NotebookView", "PayloadError", "SCORE_TERMS_MAX_VALUES", "VALUE_WEIGHTED_MAX_TOKENS", "bundle_js",
           "check_blob", "decode", "decode_payload", "decode_query_key", "encode_payload", "encode_query_key",
           "input_text", "input_title", "notebook_html", "run_key", "script_element", "standalone_html",
           "wordpiece_word_ids"]
