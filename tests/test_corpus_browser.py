"""The Corpus tab in Chromium, at 1280 x 720 and on a phone (390 x 844): a click from each corpus view (a head's tile,
a point of the query/key map, a sentence of the sentence map, a search's hit) opens the right sentence, layer, head
and token in the attention views; hovering, brushing and zooming a map ask the server nothing; a link reopens a
corpus view, and a head past the model's or a search without a token is one sentence while the rest works."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from bertviz_app import app, i18n, load
from bertviz_app.heads import BROAD, CLEAR_ROLES, MIXED
from pages import AppPage, serving, shoot

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def corpus_server(tiny_mlm_folder, small_corpus):
    from bertviz_app.app.tabs.corpus import open_corpora

    explorers = {"tiny": load(tiny_mlm_folder, device="cpu")}
    corpora, problems = open_corpora([str(small_corpus)], explorers, lambda source: None)
    with serving(explorers, corpora=corpora, corpus_problems=problems) as served:
        yield served.url, corpora["small"].corpus


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def in_sight(page, selector: str) -> dict:
    """Where `selector` is once scrolled into view and still: on a busy machine the page's layout may still move
    (tabs moving in, a scroll ending), and a click at a box read too early lands elsewhere."""
    page.eval_on_selector(selector, "e => e.scrollIntoView({ block: 'center' })")
    box = None
    for _ in range(40):
        page.wait_for_timeout(150)
        now = page.locator(selector).bounding_box()
        if now == box:
            break
        box = now
    return box


def landmark(page, pane: str):
    """A point of the map on screen that a pointer hits, as (point, x, y) in the page."""
    view = f"#corpus-pane-{pane} .bv-point-map"
    box = in_sight(page, f"{view} canvas")
    point, x, y = page.eval_on_selector(view, "e => JSON.parse(e.dataset.geometry).points[0]")
    return point, box["x"] + x, box["y"] + y


def opened(page, corpus, sentence: int, token=None) -> dict:
    """Wait until the attention views show corpus sentence `sentence` (and `token` selected): the link's parameters."""
    row = corpus.sentences.loc[sentence]
    page.wait_for_function("t => new URLSearchParams(location.search).get('a') === t", arg=row["text"])
    if token is not None:
        page.wait_for_function("t => new URLSearchParams(location.search).get('token') === t", arg=str(token))
    return query(page)


def tooltip(page, pane: str) -> str:
    return page.eval_on_selector(f"#corpus-pane-{pane} .bv-tooltip", "t => t.hidden ? '' : t.textContent")


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_a_click_from_each_corpus_view_opens_its_sentence_at_that_head(browser, corpus_server, size):
    url, corpus = corpus_server
    visitor = AppPage(browser, url + "?corpus=small&cview=heads", size)
    page = visitor.page
    page.wait_for_selector(".bv-corpus-heads[data-drawn='all:entropy_ratio']")
    visitor.settle(500)
    # heads: a tile opens that head's details, and from there the head in the attention views
    g = page.eval_on_selector(".bv-corpus-heads", "e => JSON.parse(e.dataset.geometry)")
    box = in_sight(page, ".bv-corpus-heads canvas")
    page.mouse.click(box["x"] + g["left"] + 2 * g["pitch"] + g["tile"] / 2, box["y"] + g["top"] + g["pitch"] + 5)
    page.wait_for_function("() => document.querySelector('#corpus-head h3')?.textContent.startsWith("
                           "'Layer 1, head 2:')")
    assert (query(page)["clayer"], query(page)["chead"]) == ("1", "2")
    page.click("#corpus-open-views")
    page.wait_for_function("() => /layer=1&head=2/.test(location.search)")

    # the head's query/key map: hover, zoom and brush ask nothing; a click opens the token's sentence at that head
    page.click("#corpus-open-map")
    page.wait_for_selector("#corpus-pane-qk .bv-point-map[data-drawn^='corpus_qk:1:2:']")
    # the map's pickers follow the head it was opened for, and stay there when its colouring changes
    assert (page.input_value("#corpus-layer"), page.input_value("#corpus-head-pick")) == ("1", "2")
    page.select_option("#corpus-color", "position")
    page.wait_for_function("() => new URLSearchParams(location.search).get('color') === 'position'")
    assert (page.input_value("#corpus-layer"), page.input_value("#corpus-head-pick")) == ("1", "2")
    page.select_option("#corpus-color", "kind")
    visitor.settle(500)
    asked = len(visitor.requests)
    point, x, y = landmark(page, "qk")
    page.mouse.move(x, y)
    page.wait_for_function("() => !document.querySelector('#corpus-pane-qk .bv-tooltip').hidden")
    tip = tooltip(page, "qk")
    sentence, position = int(re.search(r"sentence (\d+)", tip)[1]), int(re.search(r"position (\d+)", tip)[1])
    page.mouse.wheel(0, -240)
    page.click("#corpus-zoom-in-qk")
    page.click("#corpus-zoom-all-qk")
    _, x0, y0 = landmark(page, "qk")
    box = page.locator("#corpus-pane-qk canvas").bounding_box()
    page.mouse.move(max(box["x"] + 2, x0 - 60), max(box["y"] + 2, y0 - 60))
    page.mouse.down()  # a drag brushes a rectangle around the point
    page.mouse.move(min(box["x"] + box["width"] - 2, x0 + 60), min(box["y"] + box["height"] - 2, y0 + 60), steps=6)
    page.mouse.up()
    page.wait_for_selector("#corpus-brushed-qk ul.bv-brushed li")
    assert page.wait_for_function("() => document.querySelector('#corpus-brushed-qk p').textContent").json_value()
    page.wait_for_timeout(300)
    assert visitor.requests[asked:] == []  # hover, wheel, zoom buttons and brush: answered in the page
    point2, x, y = landmark(page, "qk")
    assert point2 == point
    page.mouse.click(x, y)
    q = opened(page, corpus, sentence, position)
    assert (q["layer"], q["head"], q["token"]) == ("1", "2", str(position))
    assert page.input_value("#sentence-a textarea") == corpus.sentences.loc[sentence, "text"]

    # the sentence map: a click analyses that sentence
    visitor_open_corpus_view(page, "sentences")
    page.wait_for_selector("#corpus-pane-sentences .bv-point-map[data-drawn^='corpus_sentences']")
    _, x, y = landmark(page, "sentences")
    page.mouse.move(x, y)
    page.wait_for_function("() => !document.querySelector('#corpus-pane-sentences .bv-tooltip').hidden")
    sentence = int(re.match(r"sentence (\d+)", tooltip(page, "sentences"))[1])
    page.mouse.click(x, y)
    opened(page, corpus, sentence)

    # search by meaning: without a token, one sentence; with one, the hits, each opening its sentence at its token
    visitor_open_corpus_view(page, "search")
    page.evaluate("() => BertvizViews.viewerIn('attention-host').viewer.selection.set({ token: null })")
    page.click("#corpus-search-go")
    page.wait_for_function("() => document.querySelector('#corpus-message').textContent.startsWith('Select a token')")
    visitor.open_tab("Tokens")  # a row of the token table selects its token for the search
    page.locator("#token-table tbody tr").nth(2).click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('token') === '2'")
    visitor.open_tab("Corpus")
    visitor_open_corpus_view(page, "search")
    assert page.text_content("#corpus-search-token").startswith("Token: “")
    page.click("#corpus-search-go")
    page.wait_for_selector("#corpus-search-result ol.bv-hits button")
    assert page.text_content("#corpus-message") == ""
    hit = page.locator("#corpus-search-result ol.bv-hits button").nth(1)
    sentence, position = int(hit.get_attribute("data-sentence")), int(hit.get_attribute("data-position"))
    assert hit.locator("mark").count() == 1  # the token marked, as text
    hit.click()
    q = opened(page, corpus, sentence, position)
    assert (q["layer"], q["head"]) == (str(corpus.num_layers - 1), "2")  # the search's layer is the hidden state after it
    assert visitor.errors == []
    page.close()


def visitor_open_corpus_view(page, view: str) -> None:
    in_sight(page, f"#corpus-tab-{view}")
    page.click(f"#corpus-tab-{view}")


def test_a_link_reopens_a_corpus_view_and_a_bad_head_is_one_sentence(browser, corpus_server):
    url, corpus = corpus_server
    visitor = AppPage(browser, url + "?corpus=small&cview=qk&clayer=1&chead=3&color=position")
    page = visitor.page
    page.wait_for_selector("#corpus-pane-qk .bv-point-map[data-drawn^='corpus_qk:1:3:']")
    assert page.get_by_role("tab", name="Corpus", exact=True).get_attribute("aria-selected") == "true"
    assert page.input_value("#corpus-color") == "position" and page.input_value("#corpus-head-pick") == "3"
    assert page.text_content("#corpus-message") == ""
    page.close()

    visitor = AppPage(browser, url + "?corpus=small&cview=qk&clayer=1&chead=9")
    page = visitor.page
    page.wait_for_selector("#corpus-pane-qk .bv-point-map[data-drawn^='corpus_qk:1:0:']")
    assert page.text_content("#corpus-message") == ("This link asks for head 9, and the corpus's model has 4 heads "
                                                    "(0 to 3); showing head 0 instead.")
    visitor.views_drawn()  # the attention views above work as ever
    assert query(page)["chead"] == "0" and visitor.errors == []
    page.close()

    # a corpus the server does not serve: the one it does, and why
    visitor = AppPage(browser, url + "?corpus=nope&cview=qk&clayer=1&chead=3")
    page = visitor.page
    page.wait_for_selector("#corpus-pane-heads:not([hidden])")
    assert page.text_content("#corpus-message") == ("This link asks for the corpus nope, which is not served here "
                                                    "(small); showing small.")
    assert query(page)["corpus"] == "small" and visitor.errors == []
    page.close()


def test_the_offline_page_of_the_maps_works_from_a_file_without_network(browser, corpus_server, tmp_path):
    _, corpus = corpus_server
    path = corpus.save_html(tmp_path / "corpus.html", heads=[(1, 2)])
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto(path.as_uri())
    page.wait_for_selector(".bv-corpus-heads[data-drawn='all:entropy_ratio']")
    page.wait_for_function("() => document.querySelector('#corpus-head h3')?.textContent.startsWith("
                           "'Layer 1, head 2:')")
    page.click("#corpus-tab-qk")
    page.wait_for_selector("#corpus-pane-qk .bv-point-map[data-drawn^='corpus_qk:1:2:']")
    # a brushed rectangle follows the points it holds when the wheel zooms the map about its middle
    _, x, y = landmark(page, "qk")
    box = page.locator("#corpus-pane-qk canvas").bounding_box()
    half = min(30, x - box["x"] - 2, box["x"] + box["width"] - x - 2, y - box["y"] - 2,
               box["y"] + box["height"] - y - 2)
    page.mouse.move(x - half, y - half)
    page.mouse.down()
    page.mouse.move(x + half, y + half, steps=4)
    page.mouse.up()
    brushed = "() => JSON.parse(document.querySelector('#corpus-pane-qk .bv-point-map').dataset.brush || 'null')"
    before = page.evaluate(brushed)
    page.mouse.move(x, y)
    page.mouse.wheel(0, -200)  # zoom e^0.5 about the pointer
    page.wait_for_function(f"w => ({brushed})()?.b.x - ({brushed})().a.x > w",
                           arg=before["b"]["x"] - before["a"]["x"] + 5)
    after = page.evaluate(brushed)
    middle = [(r["a"][k] + r["b"][k]) / 2 for r in (before, after) for k in ("x", "y")]
    assert abs(middle[0] - middle[2]) < 1.5 and abs(middle[1] - middle[3]) < 1.5, (before, after)
    assert abs((after["b"]["x"] - after["a"]["x"]) / (before["b"]["x"] - before["a"]["x"]) - 1.6487) < 0.02
    page.click("#corpus-zoom-all-qk")
    _, x, y = landmark(page, "qk")
    page.mouse.move(x, y)
    page.wait_for_function("() => !document.querySelector('#corpus-pane-qk .bv-tooltip').hidden")
    sentence = re.search(r"sentence (\d+)", tooltip(page, "qk"))[1]
    page.mouse.click(x, y)
    page.wait_for_function("s => document.querySelector('.bv-corpus-opened').textContent.startsWith(`Sentence ${s},`)",
                           arg=sentence)
    page.select_option("#corpus-head-pick", "0")  # a head the page did not save: one sentence, the rest works
    page.wait_for_function("() => document.querySelector('#corpus-message').textContent.startsWith("
                           "'This saved page holds the query')")
    assert errors == []
    page.close()


def test_a_heads_tag_links_say_how_they_rank_and_their_numbers_stay_in_their_column(browser, tiny_mlm_folder,
                                                                                    tmp_path):
    from bertviz_app import build_corpus
    from bertviz_app.app.tabs.corpus import open_corpora

    conll = tmp_path / "t.conll"
    conll.write_text("".join(f"The DT\nold JJ\ncat NN\nsat VBD\non IN\nthe DT\nmat NN\nat IN\n{k} CD\n. .\n\n"
                             for k in range(60)))  # distinct sentences (a corpus keeps one of each)
    build_corpus(conll, tmp_path / "tagged", model=tiny_mlm_folder, say=lambda t: None, device="cpu")
    explorers = {"tiny": load(tiny_mlm_folder, device="cpu")}
    corpora, _ = open_corpora([str(tmp_path / "tagged")], explorers, lambda source: None)
    links = corpora["tagged"].corpus.tag_links(min_count=20)
    layer, head = (int(v) for v in links.groupby(["layer", "head"]).size().idxmax())  # the head with most pairs
    demo = app.build_demo(explorers, corpora=corpora)
    url = app.serve(demo, port=app.free_port(), block=False)
    try:
        visitor = AppPage(browser, f"{url}?corpus=tagged&cview=heads&clayer={layer}&chead={head}")
        page = visitor.page
        page.wait_for_function("() => document.querySelectorAll('#corpus-head ol.bv-links li').length > 0")
        note = page.evaluate("() => document.querySelector('#corpus-head ol.bv-links').previousElementSibling"
                             ".textContent")
        assert "20 times or more" in note and "the most telling first" in note, note
        # the list's numbers ("10.") inside its own box, clear of the position profile's "+10" beside it
        room, marker = page.evaluate("""() => {
            const ol = document.querySelector('#corpus-head ol.bv-links'), li = ol.lastElementChild;
            const ctx = document.createElement('canvas').getContext('2d');
            ctx.font = getComputedStyle(li).font;
            return [li.getBoundingClientRect().left - ol.getBoundingClientRect().left,
                    ctx.measureText(`${ol.children.length}. `).width]; }""")
        assert room >= marker, (room, marker)
        assert visitor.errors == []
        page.close()
    finally:
        demo.close()


def _lone_point(points: list, apart: float) -> list:
    """A head's point [layer, head, x, y] no other point comes within `apart` px of (a click there is that head)."""
    for p in points:
        if all(q is p or ((p[2] - q[2]) ** 2 + (p[3] - q[3]) ** 2) ** 0.5 > apart for q in points):
            return p
    raise AssertionError(f"every head's point has another within {apart} px: {points}")


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_what_each_layer_knows_and_a_heads_card_opened_from_the_scatter(browser, corpus_server, size, tmp_path):
    url, corpus = corpus_server
    visitor = AppPage(browser, url + "?corpus=small&cview=knows", size)
    page = visitor.page
    # an untagged corpus opens on the position probe; tags are refused in one sentence, a label is probed
    page.wait_for_selector(".bv-corpus-probe[data-drawn='probe:position']")
    assert page.text_content("#corpus-probe-caption").startswith("A linear probe of a token's position per layer")
    assert page.locator("#corpus-probe-legend > span").count() == 4  # accuracy, control, selectivity, majority
    page.select_option("#corpus-probe-target", "tag")
    page.wait_for_function("() => /^This corpus has no tags to probe: build it from a tagged source/"
                           ".test(document.querySelector('#corpus-probe-status').textContent)")
    page.select_option("#corpus-probe-target", "label")
    page.wait_for_selector(".bv-corpus-probe[data-drawn='probe:label']")
    assert page.text_content("#corpus-probe-status") == ""
    shoot(page, tmp_path, f"corpus_knows_{size[0]}x{size[1]}")

    # the heads scatter: a click on a head opens its card; a card's example opens its sentence at that head and token
    visitor_open_corpus_view(page, "cards")
    page.wait_for_selector(".bv-corpus-scatter[data-drawn='scatter:all:previous:entropy_ratio']")
    points = page.eval_on_selector(".bv-corpus-scatter", "e => JSON.parse(e.dataset.geometry).points")
    assert sorted((p[0], p[1]) for p in points) == [(l, h) for l in range(corpus.num_layers)
                                                     for h in range(corpus.num_heads)]
    layer, head, x, y = _lone_point(points, 20)
    box = in_sight(page, ".bv-corpus-scatter canvas")
    page.mouse.move(box["x"] + x, box["y"] + y)
    page.wait_for_function("() => !document.querySelector('#corpus-pane-cards .bv-tooltip').hidden")
    assert tooltip(page, "cards").startswith(f"Layer {layer}, head {head}:")
    page.mouse.click(box["x"] + x, box["y"] + y)
    page.wait_for_function("t => document.querySelector('#corpus-card h3')?.textContent.startsWith(t)",
                           arg=f"Layer {layer}, head {head}:")
    assert (query(page)["clayer"], query(page)["chead"]) == (str(layer), str(head))
    example = page.locator("#corpus-card ol.bv-card-examples button").first
    assert example.locator(".bv-card-row span").count() >= 3  # the sentence's pieces, shaded
    assert example.locator(".bv-card-from").count() == 1  # the example's token outlined
    page.select_option("#corpus-card-rank", "previous")
    page.wait_for_function("() => /highest share to the previous token/.test("
                           "document.querySelector('#corpus-card h4')?.textContent)")
    shoot(page, tmp_path, f"corpus_cards_{size[0]}x{size[1]}")
    example = page.locator("#corpus-card ol.bv-card-examples button").first
    sentence, position = int(example.get_attribute("data-sentence")), int(example.get_attribute("data-position"))
    in_sight(page, "#corpus-card ol.bv-card-examples button >> nth=0")
    example.click()
    q = opened(page, corpus, sentence, position)
    assert (q["layer"], q["head"], q["token"]) == (str(layer), str(head), str(position))
    assert visitor.errors == []
    page.close()


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_the_corpus_tab_in_spanish_asks_for_no_string_the_catalogue_lacks(browser, corpus_server, size, tmp_path):
    url, _ = corpus_server
    visitor = AppPage(browser, url + "?lang=es&corpus=small&cview=heads&clayer=1&chead=2", size=size)
    page = visitor.page
    page.wait_for_selector("#corpus-pane-heads .bv-corpus-detail h3")
    for view, ready in [("heads", "#corpus-head h3"), ("qk", "#corpus-pane-qk .bv-point-map[data-drawn]"),
                        ("search", "#corpus-search-token"),
                        ("sentences", "#corpus-pane-sentences .bv-point-map[data-drawn]"),
                        ("cards", "#corpus-card h3")]:
        page.click(f"#corpus-tab-{view}")
        page.wait_for_selector(ready)
        shoot(page, tmp_path, f"corpus_es_{view}_{size[0]}")
    assert page.text_content("#corpus-tab-search") == "Buscar por sentido"
    assert page.text_content("#corpus-search-token") == "Aún no hay ningún token seleccionado."
    page.click("#corpus-tab-qk")  # the legend's query and key are ours, in Spanish
    assert page.locator("#corpus-legend-qk button").all_text_contents() == ["consulta (565)", "clave (565)"]
    assert page.text_content("#corpus-card h3").startswith("Capa 1, cabeza 2: ")
    # the head's role, which the server names in English, in Spanish (corpus-heads.mjs roleText)
    roles = {*CLEAR_ROLES, BROAD, MIXED, "punctuation"}
    role = page.text_content("#corpus-card h3").split(": ", 1)[1]
    spanish = {i18n.translate(r, "es") for r in roles}
    assert (role in spanish and (role not in roles or role.startswith("["))) or role.startswith("enlaza "), role
    missing = page.evaluate("() => window.BertvizViews.i18n.missing()")
    assert missing == [] and visitor.errors == []
    page.close()
