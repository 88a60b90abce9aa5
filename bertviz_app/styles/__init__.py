"""The one source of our CSS: every rule of every page is written once, in a .css file of this folder.

Hosts only name them: the Gradio app hands app.css and app-access.css to gradio; the static page inlines page.css;
the views' script carries the files its modules put into the page (views/page.py's bundle step inlines them, each
module names its own with `addStylesheet`); a saved page and the static page inline base.css, a notebook output notebook.css;
the class poll's phone page inlines poll-phone.css. tests/test_styles.py fails on a CSS rule written anywhere else.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

STYLES = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def stylesheet(name: str) -> str:
    """The text of the stylesheet `name` (a file of this folder, e.g. "views.css")."""
    path = STYLES / name
    if path.parent != STYLES or path.suffix != ".css" or not path.is_file():
        raise ValueError(f"no stylesheet {name!r} in {STYLES}")
    return path.read_text(encoding="utf-8")
