"""The attention views in a real browser: standalone pages opened from file:// in Debian's headless Chromium with
every non-file request aborted, driven through their controls and canvases.

Screenshots go to the test's tmp_path and, when BERTVIZ_SCREENSHOTS=DIR is set, to DIR as well, named views_*.png.
The pure parts of the JavaScript have their own unit tests (tests/js, `node --test tests/js`); these only drive
and look."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from bertviz_app.views import encode_payload, encode_query_key, standalone_html

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 60_000  # two shared cores; a 512-token page inflates 1.4 MB and pools 72 heads on its first draw
VIEWS = ("lines", "matrix", "overview", "qk")
ANIMAL = "The animal didn't cross the street because it was too tired."
SIXTEEN = "The quick brown fox jumps over the lazy dog because it was very tired today."  # 16 tokens and 2 marks
PAIR25 = (ANIMAL, "It slept all day in the sun.")  # 25 tokens
MARKUP = ["[CLS]", "<b>", "bold", "</b>", "<script>alert(1)</script>", "&amp;", "[SEP]", "<img src=x>", "[SEP]"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Standalone pages of the default model at 32 and 512 tokens, one without query/key vectors, and one of
    tokens that look like markup."""
    import importlib.util

    import bertviz_app
    spec = importlib.util.spec_from_file_location("bench_views", ROOT / "benchmarks" / "bench_views.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    explorer = bertviz_app.load(device="cpu", max_tokens=512)
    folder = tmp_path_factory.mktemp("views-pages")
    out = {}
    for tokens in (32, 512):
        run = explorer.run(*bench.sample_pair(explorer, tokens))
        out[tokens] = folder / f"page{tokens}.html"
        out[tokens].write_text(standalone_html(run.views_payload(), run.query_key_payload()), encoding="utf-8")
        if tokens == 32:
            out["blobs"] = (run.views_payload(), run.query_key_payload())
            out["no-qk"] = folder / "no-qk.html"
            out["no-qk"].write_text(standalone_html(run.views_payload()), encoding="utf-8")
    out["animal"] = folder / "animal.html"
    out["animal"].write_text(standalone_html(explorer.run(ANIMAL).views_payload()), encoding="utf-8")
    for key, text in (("sixteen", (SIXTEEN,)), ("pair25", PAIR25)):
        out[key] = folder / f"{key}.html"
        out[key].write_text(standalone_html(explorer.run(*text).views_payload()), encoding="utf-8")
    t = len(MARKUP)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 2, t, t))
    att = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    blob = encode_payload(MARKUP, [0] * 7 + [1] * 2, [1, 0, 0, 0, 0, 0, 1, 0, 1], att, model="<i>model</i>",
                          title="<b>not bold</b>")
    qk = encode_query_key(rng.standard_normal((2, 2, t, 4)), rng.standard_normal((2, 2, t, 4)))
    out["markup"] = folder / "markup.html"
    out["markup"].write_text(standalone_html(blob, qk), encoding="utf-8")
    return out


class Opened:
    """A page opened from file:// with the network blocked; what it tried to fetch and what it logged."""

    def __init__(self, browser, path: Path, size=(1280, 720), view: str = "lines"):
        self.page = browser.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.set_viewport_size({"width": size[0], "height": size[1]})
        self.network: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:"))
                     else self.network.append(r.url))
        self.page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                        else r.abort())
        self.page.goto(path.as_uri())
        self.wait_drawn(view)

    def close(self):
        self.page.close()

    def wait_drawn(self, view: str, contains: str = "") -> str:
        self.page.wait_for_function(
            "([v, s]) => { const d = document.querySelector(`#view-pane-${v} .bv-view`)?.dataset.drawn;"
            " return d !== undefined && d.includes(s); }", arg=[view, contains])
        return self.drawn(view)

    def drawn(self, view: str) -> str:
        return self.page.evaluate("v => document.querySelector(`#view-pane-${v} .bv-view`).dataset.drawn", view)

    def labels(self, view: str) -> int:
        """How many token labels `view` painted. The drawn mark is set with the layout, the count by the paint a
        frame later, so this waits for the paint."""
        return int(self.page.wait_for_function(
            "v => document.querySelector(`#view-pane-${v} .bv-view`)?.dataset.labels", arg=view).json_value())

    def tab(self, view: str) -> None:
        self.page.click(f"#view-tab-{view}")
        self.wait_drawn(view)

    def set_input(self, selector: str, value) -> None:
        """What a keyboard or a slider drag does: set the value, fire `input`."""
        self.page.eval_on_selector(selector, "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', "
                                             "{bubbles: true})); }", str(value))

    def geometry(self, view: str) -> dict:
        return json.loads(self.page.eval_on_selector(f"#view-pane-{view} .bv-scroller", "e => e.dataset.geometry"))

    def click_in(self, view: str, x: float, y: float) -> None:
        """Click at picture coordinates (x, y) of a view's scrolling box."""
        box = self.page.locator(f"#view-pane-{view} .bv-scroller").bounding_box()
        scroll = self.page.eval_on_selector(f"#view-pane-{view} .bv-scroller", "e => [e.scrollLeft, e.scrollTop]")
        self.page.mouse.click(box["x"] + x - scroll[0], box["y"] + y - scroll[1])


@pytest.fixture
def opened(browser, pages):
    made = []

    def open_(key, size=(1280, 720)):
        made.append(Opened(browser, pages[key], size))
        return made[-1]
    yield open_
    for o in made:
        o.close()


def shoot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"views_{name}.png"
    page.screenshot(path=str(path))
    target = os.environ.get("BERTVIZ_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def test_offline_page_draws_every_view_with_the_network_blocked(opened, tmp_path):
    o = opened(32)
    for view in VIEWS:
        o.tab(view)
        assert o.page.locator(f"#view-pane-{view}").is_visible()
        assert o.page.locator(f"#view-pane-{view} .bv-caption").inner_text().strip()  # says what it shows
    assert o.network == [] and o.errors == []
    for name in ("view-layer", "view-head", "view-all-heads", "view-token", "view-export-png", "view-export-svg",
                 "view-export-html"):
        assert o.page.locator(f"#attention-view #{name}").count() == 1, name


def test_layer_and_head_inputs_redraw_without_the_network(opened):
    o = opened(32)
    head = o.page.input_value("#view-head")
    o.set_input("#view-layer", 3)
    assert f"layer=3 head={head}" in o.wait_drawn("lines", "layer=3")  # the head stays
    o.set_input("#view-head", 6)
    o.wait_drawn("lines", "layer=3 head=6")
    o.page.check("#view-all-heads")
    o.wait_drawn("lines", "head=all")
    o.set_input("#view-head", 2)  # moving the head slider leaves "all heads"
    o.wait_drawn("lines", "head=2")
    assert not o.page.is_checked("#view-all-heads")
    o.page.select_option("#view-token", "5")
    o.wait_drawn("lines", "token=5")
    o.tab("matrix")
    o.set_input("#view-layer", 4)
    o.wait_drawn("matrix", "layer=4 head=2 token=5")
    assert o.network == [] and o.errors == []


def test_clicking_a_token_in_the_lines_view_moves_the_other_views(opened, tmp_path):
    o = opened(32)
    g = o.geometry("lines")
    o.click_in("lines", g["left"] - 30, g["top"] + 4.5 * g["pitch"])  # the label of token 4, left column
    o.wait_drawn("lines", "token=4")
    assert o.page.input_value("#view-token") == "4"
    assert o.page.input_value("#view-direction") == "from"
    shoot(o.page, tmp_path, "lines-token-selected")
    o.tab("matrix")
    assert "token=4" in o.drawn("matrix")
    o.tab("qk")
    assert "query=4" in o.drawn("qk")
    token = o.page.eval_on_selector("#view-token", "e => e.selectedOptions[0].textContent").split(": ", 1)[1]
    assert f"Query \u201c{token}\u201d (token 4)" in o.page.locator("#view-pane-qk .bv-stats").inner_text()
    # A cell of the matrix selects its row's token.
    o.tab("matrix")
    g = o.geometry("matrix")
    o.click_in("matrix", g["left"] + 2.5 * g["cell"], g["top"] + 6.5 * g["cell"])
    o.wait_drawn("matrix", "token=6")
    assert o.network == [] and o.errors == []


def test_the_page_opens_on_an_informative_head_and_finds_where_a_token_attends(opened, tmp_path):
    """Layer 0, head 0 is a tangle; the page opens elsewhere, and for "it" it lists the heads where "it" attends
    most, among them layer 3, head 1 -> "animal" (one click opens it)."""
    o = opened("animal")
    assert (o.page.input_value("#view-layer"), o.page.input_value("#view-head")) != ("0", "0")
    assert o.page.locator("#view-find").is_hidden()  # no token, no list
    tokens = o.page.eval_on_selector_all("#view-token option", "os => os.map(o => o.textContent)")
    it = next(t.split(": ")[0] for t in tokens if t.endswith(": it"))
    o.page.select_option("#view-token", it)
    buttons = o.page.locator("#view-find button")
    assert buttons.count() == 5
    texts = buttons.all_inner_texts()
    assert "layer 3, head 1 \u2192 animal 0." in " | ".join(texts), texts
    shoot(o.page, tmp_path, "find-heads")
    o.page.click("#view-find button[data-layer='3'][data-head='1']")
    o.wait_drawn("lines", f"layer=3 head=1 token={it}")
    assert o.page.get_attribute("#view-find button[data-layer='3'][data-head='1']", "aria-pressed") == "true"
    # A pair: "it" to "animal" ranks the heads by that one weight.
    animal = next(t.split(": ")[0] for t in tokens if t.endswith(": animal"))
    o.page.select_option("#view-find-to", animal)
    assert o.page.locator("#view-find button").first.inner_text().startswith("layer 3, head 1 \u2192 animal")
    assert o.network == [] and o.errors == []


def test_on_a_phone_the_heads_where_a_token_attends_say_layer_and_head(opened, tmp_path):
    o = opened("animal", (390, 844))
    tokens = o.page.eval_on_selector_all("#view-token option", "os => os.map(o => o.textContent)")
    o.page.select_option("#view-token", next(t.split(": ")[0] for t in tokens if t.endswith(": it")))
    buttons = o.page.locator("#view-find button")
    assert buttons.count() == 5
    for text in buttons.all_inner_texts():  # "layer 3, head 1" over "-> animal 0.45", not "3.1 -> animal 0.45"
        assert re.fullmatch(r"layer \d+, head \d+\n\u2192 \S+ 0\.\d\d", text), text
    boxes = [buttons.nth(k).bounding_box() for k in range(5)]
    assert all(b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in boxes), boxes
    assert len({round(b["y"]) for b in boxes}) <= 3, boxes  # rows of two or three buttons, not one a row
    o.page.locator("#view-find").scroll_into_view_if_needed()
    shoot(o.page, tmp_path, "find-heads-390x844")
    assert o.errors == []


def test_lines_stay_a_few_hundred_pixels_apart_and_one_head_is_one_color(opened, tmp_path):
    o = opened(32)
    g = o.geometry("lines")
    width = o.page.eval_on_selector("#view-pane-lines .bv-scroller", "e => e.clientWidth")
    assert width > 1000 and g["right"] - g["left"] <= 360, g  # 1,100 px before
    assert abs((g["left"] + g["right"]) / 2 - width / 2) < 2  # in the middle of the box
    colors = set()
    for head in (0, 7):  # head 7's color in the all-heads key is gray
        o.set_input("#view-head", head)
        o.wait_drawn("lines", f"head={head} ")
        shoot(o.page, tmp_path, f"lines-head{head}")
        with o.page.expect_download() as info:
            o.page.click("#view-export-svg")
        svg = Path(info.value.path()).read_text(encoding="utf-8")
        colors |= set(re.findall(r'fill="none" stroke="([^"]+)"', svg))
    assert colors == {"#08519c"}, colors


def test_clicking_an_overview_tile_opens_that_head(opened, tmp_path):
    o = opened(32)
    o.tab("overview")
    g = o.geometry("overview")
    o.page.locator("#view-pane-overview .bv-scroller").hover(position={"x": g["left"] + 7 * (g["tile"] + g["gap"])
                                                                      + g["tile"] / 2,
                                                                      "y": g["top"] + 2 * g["rowPitch"] + 10})
    assert "Layer 2, head 7" in o.page.locator("#view-pane-overview .bv-stats").inner_text()  # statistics on hover
    assert "Entropy" in o.page.locator("#view-pane-overview .bv-stats").inner_text()
    shoot(o.page, tmp_path, "overview-hover")
    o.click_in("overview", g["left"] + 7 * (g["tile"] + g["gap"]) + g["tile"] / 2, g["top"] + 2 * g["rowPitch"] + 10)
    o.wait_drawn("lines", "layer=2 head=7")
    assert o.page.input_value("#view-layer") == "2" and o.page.input_value("#view-head") == "7"
    assert o.page.get_attribute("#view-tab-lines", "aria-selected") == "true"


def test_exports_give_files_that_open(opened, browser, tmp_path):
    o = opened(32)
    o.tab("matrix")
    with o.page.expect_download() as info:
        o.page.click("#view-export-png")
    png = Path(info.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 1000 and height >= 600  # twice the view's CSS size
    with o.page.expect_download() as info:
        o.page.click("#view-export-svg")
    assert info.value.suggested_filename.endswith(".svg")
    svg = Path(info.value.path()).read_text(encoding="utf-8")
    tree = ET.fromstring(svg.split("?>", 1)[1])  # well-formed XML
    texts = [t.text for t in tree.iter("{http://www.w3.org/2000/svg}text")]
    layer = o.page.input_value("#view-layer")
    assert "[CLS]" in texts and any(t and f"layer {layer}," in t for t in texts)
    assert "embedded PNG bitmap" in svg  # says that the cells are a bitmap
    # "Save page" keeps the view on screen: the saved page opens on the same view, layer, head and token.
    o.set_input("#view-layer", 4)
    o.set_input("#view-head", 2)
    o.page.select_option("#view-token", "5")
    o.wait_drawn("matrix", "layer=4 head=2 token=5")
    with o.page.expect_download() as info:
        o.page.click("#view-export-html")
    saved = tmp_path / "saved.html"
    info.value.save_as(saved)
    again = Opened(browser, saved, view="matrix")  # the saved page opens offline by itself
    try:
        assert "layer=4 head=2 token=5" in again.drawn("matrix")
        assert again.page.get_attribute("#view-tab-matrix", "aria-selected") == "true"
        again.tab("qk")
        assert "layer=4 head=2 query=5" in again.drawn("qk")
        assert again.network == [] and again.errors == []
    finally:
        again.close()
    assert o.errors == []


def saved(o: Opened, button: str) -> tuple[str, bytes]:
    with o.page.expect_download() as info:
        o.page.click(f"#view-export-{button}")
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def picture_size(o: Opened, view: str) -> tuple[int, int, int]:
    """The whole picture's width and height (its scrolling spacer) and the height of the box that shows it."""
    return tuple(o.page.eval_on_selector(f"#view-pane-{view} .bv-scroller",
                                         "e => [e.firstChild.offsetWidth, e.firstChild.offsetHeight, e.clientHeight]"))


@pytest.mark.parametrize("key, view, max_height", [("sixteen", "lines", 300), ("pair25", "matrix", 300)])
def test_exports_hold_the_whole_picture_whatever_the_box_shows(opened, tmp_path, key, view, max_height):
    """A 16-token Lines view in the app's 300 px box was saved down to "tired" (an SVG 331 px high, clipped); a
    25-token pair's Matrix at 1280 x 720 only with sentence A's rows. The saved picture is all of it."""
    o = opened(key)
    if max_height:  # a box that shows part of the picture (the app's first screen gave 300 px at 1280 x 720)
        o.page.evaluate("async ([h, v]) => { await BertvizViews.mount(document.getElementById('bertviz-root'), "
                        "document.getElementById('bertviz-payload').textContent.trim(), "
                        "{ maxHeight: h, selection: { view: v } }); }", [max_height, view])
    o.tab(view)
    tokens = [t.split(": ", 1)[1] for t in o.page.eval_on_selector_all("#view-token option",
                                                                      "os => os.slice(1).map(o => o.textContent)")]
    assert len(tokens) == (18 if key == "sixteen" else 25)
    width, height, box = picture_size(o, view)
    assert box < height  # the premise: the box shows only part of the picture
    shoot(o.page, tmp_path, f"export-{key}-{view}-on-screen")
    name, svg = saved(o, "svg")
    tree = ET.fromstring(svg.decode("utf-8").split("?>", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    assert float(tree.get("height")) == height + 30  # the picture under its title line
    texts = [t.text for t in tree.iter(f"{ns}text")]
    for token in set(tokens):  # every label, on both sides (lines) or both axes (matrix)
        assert texts.count(token) >= 2 * tokens.count(token), (token, texts.count(token))
    last = max(float(t.get("y") or 0) for t in tree.iter(f"{ns}text") if t.text == tokens[-1]
               and not (t.get("transform") or "").strip())
    assert last < height + 30
    for clip in tree.iter(f"{ns}clipPath"):  # a view's own clip (the matrix's cells) ends under the last row
        ys = [float(y) for y in re.findall(r"[ML][\d.-]+ ([\d.-]+)", clip[0].get("d"))]
        assert max(ys) >= last, clip[0].get("d")
    name, png = saved(o, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and name.endswith(".png")
    png_width, png_height = struct.unpack(">II", png[16:24])
    assert png_height == 2 * (height + 30)  # twice the whole picture, as wide as it or its title
    assert png_width == 2 * float(tree.get("width")) and png_width >= 2 * width
    (tmp_path / name).write_bytes(png)
    target = os.environ.get("BERTVIZ_SCREENSHOTS")
    if target:
        Path(target, f"views_export-{key}-{name}").write_bytes(png)
    assert o.errors == [] and o.network == []


def test_query_key_view_says_how_to_get_its_data_and_loads_it_lazily(opened, pages):
    o = opened("no-qk")
    o.page.click("#view-tab-qk")
    o.page.locator("#view-pane-qk .bv-notice", has_text="saved without the query and key vectors").wait_for()
    # A host hands a loader instead: called once, when the view is first opened.
    blob, qk = pages["blobs"]
    o.page.evaluate("""async ([payload, qk]) => {
        window.loads = 0;
        window.viewer = await BertvizViews.mount(document.getElementById('bertviz-root'), payload, {
            loadQueryKey: async () => { window.loads++; await new Promise(r => setTimeout(r, 200)); return qk; } });
    }""", [base64.b64encode(blob).decode(), base64.b64encode(qk).decode()])
    o.page.select_option("#view-token", "3")
    assert o.page.evaluate("window.loads") == 0
    o.page.click("#view-tab-qk")
    o.wait_drawn("qk", "query=3")
    o.tab("lines")
    o.tab("qk")
    assert o.page.evaluate("window.loads") == 1
    o.page.click("#view-qk-expand")
    o.page.wait_for_function("() => document.querySelector('#view-qk-expand').getAttribute('aria-pressed') === 'true'")
    assert o.errors == [] and o.network == []


def test_mount_takes_a_payload_decoded_already(opened, pages):
    """A page that computes attention itself hands mount the decoded object, never the encoded bytes."""
    o = opened("no-qk")
    blob, _ = pages["blobs"]
    o.page.evaluate("""async (b64) => {
        const data = await BertvizViews.decode(b64);
        data.title = 'made in the page';
        await BertvizViews.mount(document.getElementById('bertviz-root'), data, { selection: { layer: 2, head: 3 } });
    }""", base64.b64encode(blob).decode())
    o.wait_drawn("lines", "layer=2 head=3")
    assert o.page.locator(".bv-title").inner_text() == "made in the page"
    o.tab("matrix")
    assert o.errors == [] and o.network == []


def test_tokens_are_shown_as_text_never_as_markup(opened, tmp_path):
    o = opened("markup")
    for view in VIEWS:
        o.tab(view)
    assert o.page.locator("#attention-view b, #attention-view i, #attention-view img").count() == 0
    assert o.page.locator("#attention-view script").count() == 0
    assert o.page.locator(".bv-title").inner_text() == "<b>not bold</b>"
    assert "<i>model</i>" in o.page.locator(".bv-subtitle").inner_text()
    options = o.page.eval_on_selector_all("#view-token option", "os => os.map(o => o.textContent)")
    assert "4: <script>alert(1)</script>" in options and "7: <img src=x>" in options
    o.page.select_option("#view-token", "4")
    o.tab("qk")
    assert "\u201c<script>alert(1)</script>\u201d" in o.page.locator("#view-pane-qk .bv-stats").inner_text()
    assert o.errors == []  # no alert() dialog, no error


def test_512_tokens_stay_usable(opened, tmp_path):
    o = opened(512)
    assert o.page.input_value("#view-zoom") == "fit"
    labels = o.labels("lines")
    assert 0 < labels < 200  # thinned: 1,024 labels would be a black smear
    o.set_input("#view-layer", 5)
    o.wait_drawn("lines", "layer=5")
    o.page.select_option("#view-token", "300")
    o.wait_drawn("lines", "token=300")
    o.tab("matrix")
    assert o.labels("matrix") < 200
    o.page.select_option("#view-zoom", "labels")
    o.wait_drawn("matrix", "zoom=labels")
    size = o.page.eval_on_selector("#view-pane-matrix .bv-scroller", "e => [e.scrollWidth, e.clientWidth, "
                                                                     "e.scrollHeight, e.clientHeight]")
    assert size[0] > 512 * 17 and size[2] > 512 * 17 and size[1] < 1280  # scrolls inside its box
    o.page.eval_on_selector("#view-pane-matrix .bv-scroller", "e => e.scrollTo(4000, 4000)")
    o.page.wait_for_timeout(200)
    shoot(o.page, tmp_path, "512-matrix-every-label-scrolled")
    o.tab("overview")
    o.tab("qk")
    assert "query=300" in o.drawn("qk")
    assert o.page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert o.errors == [] and o.network == []


@pytest.mark.parametrize("tokens", [32, 512])
@pytest.mark.parametrize("size", [(1280, 720), (390, 844), (1440, 900)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_nothing_is_clipped_sideways(opened, tmp_path, tokens, size):
    """Every view fits or scrolls inside its own box; the page itself never scrolls sideways."""
    o = opened(tokens, size)
    for view in VIEWS:
        o.tab(view)
        overflow = o.page.evaluate("""() => {
            const width = document.documentElement.clientWidth;
            const out = [];
            if (document.documentElement.scrollWidth > width) out.push(`page ${document.documentElement.scrollWidth}`);
            for (const e of document.querySelectorAll('#attention-view *')) {
                const r = e.getBoundingClientRect();
                if (r.width === 0 || e.closest('[hidden]') || e.closest('.bv-scroller')) continue;
                if (r.right > width + 0.5 || r.left < -0.5) {
                    out.push(`${e.tagName}.${e.className}#${e.id} ${r.left}-${r.right}`);
                }
            }
            return out;
        }""")
        assert overflow == [], f"{view}: {overflow[:5]}"
        shoot(o.page, tmp_path, f"{tokens}-{size[0]}x{size[1]}-{view}")
    assert o.errors == []


def test_two_notebook_outputs_in_one_page_do_not_clash(browser, pages, tmp_path):
    """notebook_html is an <iframe srcdoc> of the standalone page: two of them in one document each draw their own
    views, with the same ids inside, and neither sees the other's."""
    from bertviz_app.views import notebook_html
    blob, qk = pages["blobs"]
    notebook = tmp_path / "notebook.html"
    notebook.write_text("<!DOCTYPE html><html><body><div id='attention-view'>the notebook's own element</div>"
                        + notebook_html(blob, qk, title="first", height=500)
                        + notebook_html(blob, title="second", height=500) + "</body></html>", encoding="utf-8")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(notebook.as_uri())
        frames = [f for f in page.frames if f != page.main_frame]
        assert len(frames) == 2
        for frame in frames:
            frame.wait_for_function("() => document.querySelector('#view-pane-lines .bv-view')?.dataset.drawn",
                                    timeout=TIMEOUT_MS)
        frames[0].eval_on_selector("#view-layer", "e => { e.value = 4; e.dispatchEvent(new Event('input')); }")
        frames[0].wait_for_function("() => document.querySelector('#view-pane-lines .bv-view').dataset.drawn"
                                    ".includes('layer=4')", timeout=TIMEOUT_MS)
        first = frames[1].eval_on_selector("#view-layer", "e => e.value")
        assert first != "4" and f"layer={first} " in frames[1].eval_on_selector("#view-pane-lines .bv-view",
                                                                               "e => e.dataset.drawn")
        assert page.locator("#attention-view").inner_text() == "the notebook's own element"
        assert errors == []
    finally:
        page.close()


SILENCE_IDS = ("view-silence-pick", "view-silence-run", "view-silence-clear", "view-silence-note")


def mount_with_silence(o: Opened, pages) -> None:
    """Mount the views again on an opened page as a host with a server would: with an `onSilence` stub that
    records its calls, takes 300 ms, and rejects with `window.failWith` when that is set."""
    blob, _ = pages["blobs"]
    o.page.evaluate("""async (payload) => {
        window.calls = []; window.failWith = null;
        window.viewer = await BertvizViews.mount(document.getElementById('bertviz-root'), payload, {
            selection: { view: 'overview', layer: 0, head: 0 },
            onSilence: async (heads) => {
                window.calls.push(heads);
                await new Promise(r => setTimeout(r, 300));
                if (window.failWith) throw new Error(window.failWith);
                return 'predictions';
            } });
    }""", base64.b64encode(blob).decode())
    o.wait_drawn("overview")


def click_tile(o: Opened, layer: int, head: int) -> None:
    """Scroll the overview so that a tile is in sight, then click its middle."""
    g = o.geometry("overview")
    x = g["left"] + head * (g["tile"] + g["gap"]) + g["tile"] / 2
    y = g["top"] + layer * g["rowPitch"] + g["tile"] / 2
    o.page.eval_on_selector("#view-pane-overview .bv-scroller", "(e, [x, y]) => e.scrollTo(Math.max(0, x - "
                            "e.clientWidth / 2), Math.max(0, y - e.clientHeight / 2))", [x, y])
    o.page.wait_for_timeout(50)
    o.click_in("overview", x, y)


def test_picking_heads_to_silence_hands_them_to_the_host(opened, pages, tmp_path):
    o = opened(32)
    o.tab("overview")
    for name in SILENCE_IDS:  # a standalone page has no server to run the model: nothing to pick
        assert o.page.locator(f"#{name}").count() == 0, name
    mount_with_silence(o, pages)
    run = o.page.locator("#view-silence-run")
    assert run.is_disabled() and run.inner_text() == "Silence 0 heads and predict"
    assert "set to zero in this forward pass" in o.page.locator("#view-silence-note").inner_text()
    o.page.click("#view-silence-pick")
    assert o.page.get_attribute("#view-silence-pick", "aria-pressed") == "true"
    assert "Picking heads to silence" in o.page.locator("#view-pane-overview .bv-stats").inner_text()

    # Two by clicks on tiles: picked, not opened.
    click_tile(o, 2, 7)
    o.wait_drawn("overview", "silenced=2.7")
    click_tile(o, 4, 1)
    o.wait_drawn("overview", "silenced=2.7,4.1")
    assert o.page.get_attribute("#view-tab-overview", "aria-selected") == "true"
    # One by the keyboard: the cursor starts on the selected head (0, 0); arrows move it, Enter picks.
    o.page.focus("#view-pane-overview .bv-scroller")
    for key in ["ArrowRight"] * 3 + ["ArrowDown"] * 5:
        o.page.keyboard.press(key)
    assert "Layer 5, head 3" in o.page.locator("#view-pane-overview .bv-stats").inner_text()
    o.page.keyboard.press("Enter")
    o.wait_drawn("overview", "silenced=2.7,4.1,5.3")
    assert "Picked to silence" in o.page.locator("#view-pane-overview .bv-stats").inner_text()
    assert run.inner_text() == "Silence 3 heads and predict"
    o.page.mouse.move(0, 0)
    shoot(o.page, tmp_path, "overview-silence-picks-1280x720")

    # The picks are the selection's: they survive switching views, and a host reads them.
    o.tab("lines")
    o.tab("overview")
    assert "silenced=2.7,4.1,5.3" in o.drawn("overview")
    assert o.page.evaluate("window.viewer.selection.get().silenced") == [[2, 7], [4, 1], [5, 3]]

    # Run: busy until the promise settles, then the host has exactly those pairs.
    run.click()
    assert run.is_disabled() and "Predicting" in run.inner_text()
    assert o.page.get_attribute("#view-pane-overview .bv-silence", "aria-busy") == "true"
    o.page.wait_for_function("() => !document.querySelector('#view-silence-run').disabled")
    assert run.inner_text() == "Silence 3 heads and predict"
    assert o.page.get_attribute("#view-pane-overview .bv-silence", "aria-busy") == "false"
    assert o.page.evaluate("window.calls") == [[[2, 7], [4, 1], [5, 3]]]
    assert "Last run silenced layer 2: head 7; layer 4: head 1; layer 5: head 3." in \
        o.page.locator("#view-pane-overview .bv-silence").inner_text()

    # A rejected promise shows its message in the pane, and the button comes back.
    o.page.evaluate("window.failWith = 'the server did not answer'")
    run.click()
    error = o.page.locator("#view-pane-overview .bv-error")
    error.wait_for()
    assert "the server did not answer" in error.inner_text()
    o.page.wait_for_function("() => !document.querySelector('#view-silence-run').disabled")
    shoot(o.page, tmp_path, "overview-silence-error")
    assert len(o.page.evaluate("window.calls")) == 2

    # A layer's label picks the whole row, and unpicks it when all of it is picked.
    g = o.geometry("overview")
    o.page.eval_on_selector("#view-pane-overview .bv-scroller", "e => e.scrollTo(0, 0)")
    o.page.wait_for_timeout(50)
    o.click_in("overview", 20, g["top"] + g["rowPitch"] + g["tile"] / 2)
    row = ",".join(f"1.{h}" for h in range(12))
    o.wait_drawn("overview", f"silenced={row},2.7")
    assert "Every head of layer 1 (12 heads).\nAll of them are picked" in \
        o.page.locator("#view-pane-overview .bv-stats").inner_text()
    shoot(o.page, tmp_path, "overview-silence-row")
    assert error.is_hidden()  # it was about the picks of then
    o.click_in("overview", 20, g["top"] + g["rowPitch"] + g["tile"] / 2)
    o.wait_drawn("overview", "silenced=2.7,4.1,5.3")
    # Clear; a host sets picks, and what does not fit the model is dropped.
    o.page.click("#view-silence-clear")
    o.page.wait_for_function("() => document.querySelector('#view-pane-overview .bv-view').dataset.drawn"
                             ".endsWith('silenced=')")
    assert run.is_disabled() and o.page.locator("#view-silence-clear").is_disabled()
    o.page.evaluate("window.viewer.selection.set({ silenced: [[0, 0], [99, 0], [0, 12]] })")
    assert o.wait_drawn("overview", "silenced=0.0").endswith("silenced=0.0")
    # Picking off: a click opens the head again.
    o.page.click("#view-silence-pick")
    assert o.page.get_attribute("#view-silence-pick", "aria-pressed") == "false"
    click_tile(o, 3, 5)
    o.wait_drawn("lines", "layer=3 head=5")
    assert o.errors == [] and o.network == []


def test_silence_picks_on_a_phone(opened, pages, tmp_path):
    o = opened(32, (390, 844))
    mount_with_silence(o, pages)
    o.page.evaluate("window.viewer.selection.set({ silenced: [[0, 1], [1, 0], [1, 2]] })")
    o.wait_drawn("overview", "silenced=0.1,1.0,1.2")
    o.page.click("#view-silence-pick")
    overflow = o.page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth")
    assert not overflow
    for name in ("view-silence-pick", "view-silence-run", "view-silence-clear"):
        box = o.page.locator(f"#{name}").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, name
    shoot(o.page, tmp_path, "overview-silence-picks-390x844")
    assert o.errors == []
