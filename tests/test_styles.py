"""One stylesheet source: every CSS rule of every page is written once, in bertviz_app/styles/, and each page carries
the stylesheets of what it draws."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bertviz_app.styles import STYLES, stylesheet
from bertviz_app.views.page import BUNDLES, bundle_js, inline_modules, page_html

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bertviz_app"
# A declaration block's opening: "{", a property (or a custom property), ":", a value, ";". JavaScript and Python
# write no such thing (an object literal separates with commas, a format spec closes with "}" before any ";").
RULE = re.compile(r"\{\s*(--[\w-]+|[a-z]+(?:-[a-z]+)*)\s*:\s*[^;{}\n]+;")
SOURCES = (".py", ".mjs", ".js", ".html", ".htm")


def _code_files():
    """Every file of the package and of assets/ that is code or markup, except the styles themselves and
    onnxruntime-web, which export-static fetches (static/runtime)."""
    for folder in (PACKAGE, ROOT / "assets"):
        for path in sorted(folder.rglob("*")):
            if path.suffix in SOURCES and STYLES not in path.parents and "runtime" not in path.parts:
                yield path


def css_written_outside(files) -> dict[str, list[str]]:
    """file -> the CSS declarations written in it, for each file that has any."""
    found = {}
    for path in files:
        hits = [m.group(0) for m in RULE.finditer(path.read_text(encoding="utf-8")) if m.group(1) != "default"]
        if hits:
            found[path.relative_to(ROOT).as_posix() if ROOT in path.parents else path.name] = hits
    return found


def test_no_css_is_written_outside_the_styles_folder():
    assert list(_code_files()), "the scan found no files"
    assert css_written_outside(_code_files()) == {}


def test_the_scan_finds_css_in_a_string(tmp_path):
    # the three shapes CSS took in the code before it moved: a template literal, an f-string, a <style> element
    (tmp_path / "a.mjs").write_text('const CSS = `\n.bv-root .x { display: none; }\n`;\nconst o = { a: 1, b: "c" };\n')
    (tmp_path / "b.py").write_text('s = f"<style>.y {{ margin: 0; }}</style>{value:.2f}"\nd = {"a": 1}\n')
    (tmp_path / "c.html").write_text("<style>\nbody { --bv-x: 1px; }\n</style>\n<p>{{CODE}}</p>\n")
    (tmp_path / "d.mjs").write_text("function f(a) { return a ? { x: 1 } : null; }\nswitch (k) { default: f(); }\n")
    found = css_written_outside(sorted(tmp_path.iterdir()))
    assert sorted(found) == ["a.mjs", "b.py", "c.html"]


def _rules(text: str):
    """(at-rule context, selector, property, value) of each declaration of a stylesheet, comments dropped."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    blocks = []  # the selectors and at-rules open around the text read
    for part in re.finditer(r"([^{}]*)([{}])", text):
        head = " ".join(part.group(1).split())
        if part.group(2) == "{":
            blocks.append(head)
            continue
        selector = blocks.pop()  # a block closes: what stood before its "}" is its declarations
        for declaration in filter(None, (d.strip() for d in head.split(";"))):
            prop, _, value = declaration.partition(":")
            yield " ".join(blocks), selector, prop.strip(), value.strip()


# Both hosts call their row of inputs #input-row, but it is not one element: a gradio Row in the app, a div of the
# static page's own. Each host's sheet says how its row lines up.
NOT_THE_SAME_ELEMENT = {("", "#input-row", "align-items", "end"),
                        ("", "body.bv-presenter #input-row", "flex-wrap", "nowrap")}


def test_each_rule_is_written_once():
    seen: dict[tuple, str] = {}
    twice = []
    for path in sorted(STYLES.glob("*.css")):
        for rule in _rules(path.read_text(encoding="utf-8")):
            if rule in seen and rule not in NOT_THE_SAME_ELEMENT:
                twice.append((rule, seen[rule], path.name))
            seen.setdefault(rule, path.name)
    assert len(seen) > 400  # every stylesheet was read
    assert twice == []


def test_every_stylesheet_is_named_by_a_host_and_every_name_is_a_stylesheet():
    named = set()
    for path in _code_files():
        named |= set(re.findall(r"""["']([\w-]+\.css)["']""", path.read_text(encoding="utf-8")))
    files = {p.name for p in STYLES.glob("*.css")}
    assert files - named == set(), "a stylesheet no page uses"
    assert named - files <= {"theme.css"}, "a name with no stylesheet (theme.css is gradio's own)"
    with pytest.raises(ValueError, match="no stylesheet"):
        stylesheet("../static/index.html")


def _sheets(code: str) -> dict[str, str]:
    found = re.search(r"^const __bvStylesheets = (.*);$", code, re.M)
    return json.loads(found.group(1)) if found else {}


def test_each_page_carries_the_stylesheets_of_what_it_draws():
    views = {name: stylesheet(name) for name in ("views.css", "views-access.css")}
    assert _sheets(bundle_js("page")) == views  # a Run's offline page: no lesson or corpus styles
    assert _sheets(bundle_js("widget")) == views
    assert set(_sheets(bundle_js("static"))) == {*views, "lesson.css"}
    assert set(_sheets(bundle_js("app"))) == {*views, "lesson.css", "corpus.css", "task-heldout.css"}
    assert set(_sheets(bundle_js("corpus"))) == {*views, "corpus.css", "task-heldout.css"}
    assert set(BUNDLES) == {"page", "widget", "static", "app", "corpus"}
    # a module without a stylesheet adds nothing to its script
    assert "__bvStylesheets" not in inline_modules({"a.mjs": "export const a = 1;\n"}, "a.mjs")
    # the pages that Python writes inline their stylesheets from the folder
    assert f"<style>{stylesheet('base.css')}</style>" in page_html("t", "", "")
