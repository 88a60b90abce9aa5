"""The Gradio UI: layout and event wiring only. Numbers come from `Run` and `analysis`, pictures from `figures` and
`views`; every handler is a few lines that pick the Run, call them and turn errors into words.

layout.py builds the page: the input, the attention views under it (attention.py, drawn by views_host.py), and the
tabs, one module each in tabs/ following one protocol (tabs/base.py), listed once in `tabs.TABS`; common.py holds
what they share. server/ is the serving side: launch.py serves the page, with the ASGI guards of guards.py in front
(body limit, no uploads, login) and the bounds listed in its docstring; gradio_internals.py holds the few places
that reach into gradio; training.py the Fine-tune tab's training lane. Models are global (loaded once, shared by
every visitor); what belongs to one visitor is the key of their current Run, kept in gr.State (the Run itself stays
in the explorer's cache).
"""

from .common import MAX_CHARS, percent, user_errors
from .layout import build_demo, load_models
from .server import free_port, serve
from .tabs.masked_lm import MAX_MASKS, MAX_TOP_K, fill_mask_view

__all__ = ["MAX_CHARS", "MAX_MASKS", "MAX_TOP_K", "build_demo", "fill_mask_view", "free_port", "load_models",
           "percent", "serve", "user_errors"]
