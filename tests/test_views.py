"""The views' payload, its budget, the JavaScript bundle and the pages that carry it (no browser here: see
test_views_browser.py; the JavaScript's own unit tests are tests/js/*.test.mjs, which `make test` runs with
`node --test tests/js`)."""

from __future__ import annotations

import base64
import html
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bertviz_app.views import (PayloadError, bundle_js, decode, decode_payload, decode_query_key, encode_payload,
                               encode_query_key, notebook_html, run_key,
                               standalone_html, wordpiece_word_ids)
from bertviz_app.views.page import BUNDLES, JS_DIR, VIEW_NAMES, BundleError, _script_text, inline_modules, view_names
from bertviz_app.views.payload import dequantize_floor8, quantize_floor8

ROOT = Path(__file__).resolve().parents[1]
BUDGET_32 = 150_000  # bytes of the attention payload, every layer and head of the default model (our issue's target)
BUDGET_512 = 2_000_000


def load_script(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def tiny():
    """A tiny random analysis: 2 layers x 3 heads, 7 tokens, a two-piece word, head size 4."""
    rng = np.random.default_rng(0)
    tokens = ["[CLS]", "play", "##ing", "<b>", "[SEP]", "ok", "[SEP]"]
    return dict(tokens=tokens, segment_ids=[0, 0, 0, 0, 0, 1, 1], special_mask=[1, 0, 0, 0, 1, 0, 1],
                attentions=softmax_rows(3 * rng.standard_normal((2, 3, 7, 7))),
                queries=rng.standard_normal((2, 3, 7, 4)).astype(np.float32),
                keys=rng.standard_normal((2, 3, 7, 4)).astype(np.float32))


# --- the payload --------------------------------------------------------------------------------------------------
def test_payload_round_trip(tiny):
    rollout = softmax_rows(np.zeros((2, 7, 7)))
    stats = {"entropy": np.arange(6, dtype=np.float32).reshape(2, 3)}
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"],
                          rollout=rollout, statistics=stats, dominant=[["a", "b", "c"], ["d", "e", "f"]],
                          model="m", title="t", text="x")
    out = decode_payload(blob)
    h = out.header
    assert (h["kind"], h["layers"], h["heads"], h["length"], h["model"]) == ("attention", 2, 3, 7, "m")
    assert h["tokens"] == tiny["tokens"]
    assert h["key"] == run_key("m", tiny["tokens"])
    assert h["dominant"][1] == ["d", "e", "f"]
    assert list(h["matrix_sets"]) == ["attention", "rollout"]
    np.testing.assert_array_equal(out.arrays["segments"], tiny["segment_ids"])
    np.testing.assert_array_equal(out.arrays["special"], tiny["special_mask"])
    np.testing.assert_array_equal(out.arrays["words"], [0, 1, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(out.arrays["statistics"][0], stats["entropy"])
    values = out.values("attention")
    assert np.abs(values - tiny["attentions"]).max() <= 1 / 255
    np.testing.assert_allclose(values.sum(-1), 1.0, atol=1e-5)
    assert np.abs(out.values("rollout") - rollout).max() <= 1 / 255


def test_floor_codes_and_their_values():
    codes = quantize_floor8(np.array([0.0, 0.00195, 0.5, 0.99999, 1.0, 1.5, -0.1]))
    np.testing.assert_array_equal(codes, [0, 0, 127, 254, 255, 255, 0])
    # A peaked row of 100: the 99 small cells share what floor cut off, not half a step each.
    row = np.full((1, 100), 0.003 / 99, dtype=np.float32)
    row[0, 0] = 0.997
    back = dequantize_floor8(quantize_floor8(row), rows_sum_to_one=True)
    assert back[0, 1] < 1e-4 and abs(back.sum() - 1) < 1e-5
    np.testing.assert_allclose(dequantize_floor8(np.array([0, 255], dtype=np.uint8)), [0.5 / 255, 1.0])


@pytest.mark.parametrize("shape, dtype, maximum", [((3, 4, 700, 700), np.float16, 1.0), ((2, 5, 33), np.float32, 1.0),
                                                   ((9,), np.float64, 2.0), ((1, 3000), np.float16, 0.5)])
def test_floor_codes_in_slices_equal_the_whole_array_at_once(shape, dtype, maximum):
    """quantize_floor8 goes through a float32 buffer a slice at a time (several slices here for the first case):
    every code must be the one the definition gives for the whole array, clipping included."""
    values = (np.random.default_rng(0).random(shape) * 1.4 * maximum - 0.2 * maximum).astype(dtype)
    whole = np.clip(np.floor(values.astype(np.float32) * np.float32(255.0 / maximum)), 0, 255).astype(np.uint8)
    codes = quantize_floor8(values, maximum)
    assert codes.dtype == np.uint8 and codes.shape == values.shape
    np.testing.assert_array_equal(codes, whole)


def test_query_key_round_trip(tiny):
    blob = encode_query_key(tiny["queries"], tiny["keys"], key="abc")
    out = decode_query_key(blob)
    assert (out.header["kind"], out.header["head_size"], out.header["key"]) == ("query_key", 4, "abc")
    assert out.arrays["queries"].dtype == np.int8 and out.arrays["queries_scale"].shape == (2, 3)
    for name in ("queries", "keys"):
        step = out.arrays[f"{name}_scale"][:, :, None, None]
        assert (np.abs(out.values(name) - tiny[name]) <= step / 2 + 1e-7).all()


def test_word_ids_join_pieces_and_keep_specials_apart():
    tokens = ["[CLS]", "un", "##believ", "##able", "!", "[SEP]", "##odd", "[SEP]"]
    assert wordpiece_word_ids(tokens, [1, 0, 0, 0, 0, 1, 0, 1]) == [0, 1, 1, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("change, message", [
    (dict(tokens=["a"]), "1 tokens but attention matrices of 7"),
    (dict(attentions=np.zeros((3, 7, 7))), "must be \\(layers, heads, T, T\\)"),
    (dict(segment_ids=[0, 1]), "segment_ids has 2 entries for 7 tokens"),
    (dict(attentions=np.full((1, 1, 7, 7), np.nan)), "NaN"),
])
def test_payload_refuses_bad_arrays(tiny, change, message):
    args = {**dict(tokens=tiny["tokens"], segment_ids=tiny["segment_ids"], special_mask=tiny["special_mask"],
                   attentions=tiny["attentions"]), **change}
    with pytest.raises(PayloadError, match=message):
        encode_payload(args["tokens"], args["segment_ids"], args["special_mask"], args["attentions"])


def test_reading_something_else_says_what_it_is(tiny):
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"])
    with pytest.raises(PayloadError, match="wrong magic"):
        decode(b"XXXX" + blob[4:])
    with pytest.raises(PayloadError, match="version 9"):
        decode(blob[:4] + bytes([9]) + blob[5:])
    with pytest.raises(PayloadError, match="expected a query/key blob"):
        decode_query_key(blob)
    with pytest.raises(PayloadError, match="too short"):
        decode(b"BV")


def test_js_fixture_is_what_the_encoder_writes_now():
    """tests/js/fixtures/ (decoded by the JavaScript tests) must match today's encoder: compare decoded contents, not
    bytes, since another zlib build may deflate the same data into different bytes."""
    fixture = load_script(ROOT / "tests" / "js" / "make_fixture.py", "make_fixture")
    blob, qk, _ = fixture.build()
    (terms_qk, _), (plain_qk, _) = fixture.build_terms(), fixture.build_terms(extra=False)
    for fresh, path in ((blob, "small.bvz"), (qk, "small.qk.bvz"), (terms_qk, "small.terms.qk.bvz"),
                        (plain_qk, "small.noterms.qk.bvz")):
        stored = decode((fixture.FIXTURES / path).read_bytes())
        now = decode(fresh)
        strip = lambda h: {k: v for k, v in h.items() if k != "sections"}  # noqa: E731 (offsets follow the bytes)
        assert strip(stored.header) == strip(now.header), "run python tests/js/make_fixture.py"
        for name, array in now.arrays.items():
            np.testing.assert_array_equal(stored.arrays[name], array, err_msg="run python tests/js/make_fixture.py")


# --- the budget, on the default model -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer  # at the model's own limit, 512 tokens


def sample_run(explorer, tokens: int):
    bench = load_script(ROOT / "benchmarks" / "bench_views.py", "bench_views")
    run = explorer.run(*bench.sample_pair(explorer, tokens))
    assert len(run) == tokens
    return run


@pytest.mark.real_weights
@pytest.mark.parametrize("tokens, budget", [(32, BUDGET_32), (512, BUDGET_512)])
def test_payload_fits_the_budget(explorer, tokens, budget):
    """Every layer and head (and rollout, statistics) of the default model; sizes, never times."""
    run = sample_run(explorer, tokens)
    blob = run.views_payload()
    assert len(blob) <= budget, f"{len(blob):,} bytes at {tokens} tokens, budget {budget:,}"
    assert len(base64.b64encode(blob)) <= budget * 4 / 3 + 4
    out = decode_payload(blob)
    assert np.abs(out.values("attention") - run.attentions).max() <= 1 / 255
    assert out.header["tokens"] == run.tokens
    qk = decode_query_key(run.query_key_payload())
    assert qk.header["key"] == out.header["key"]


@pytest.mark.real_weights
def test_a_saved_page_of_512_tokens_stays_under_5_mb(explorer, tmp_path):
    """run.save_html at the longest input: the payload, the query/key blob and the views' bundle (no host code)."""
    path = sample_run(explorer, 512).save_html(tmp_path / "page.html")
    assert path.stat().st_size < 5_000_000, f"{path.stat().st_size:,} bytes"


# --- the bundle and the pages -------------------------------------------------------------------------------------
def test_inliner_scopes_each_module_and_orders_by_imports():
    sources = {
        "main.mjs": 'import { twice } from "./b.mjs";\nimport * as a from "./a.mjs";\n'
                    "export function run() { return twice(a.one); }\n",
        "b.mjs": 'import { one as uno } from "./a.mjs";\nconst local = 2;\n'
                 "export const twice = (x) => x * local + uno - 1;\n",
        "a.mjs": "const local = 1;\nexport const one = local;\nexport async function later() {}\n",
    }
    code = inline_modules(sources, "main.mjs", "Demo")
    assert code.index("---- a.mjs") < code.index("---- b.mjs") < code.index("---- main.mjs")
    assert "const { one: uno } = __bv_a;" in code and "const a = __bv_a;" in code
    assert "export" not in code.replace("exports", "")
    assert code == inline_modules(dict(reversed(sources.items())), "main.mjs", "Demo")  # deterministic
    assert shutil.which("node"), "node is missing: `make test` installs Debian's nodejs (scripts/system_packages.sh)"
    probe = code + "console.log(globalThis.Demo.run());"
    assert subprocess.run(["node", "-e", probe], capture_output=True, text=True).stdout.strip() == "2"


@pytest.mark.parametrize("source, message", [
    ('import x from "./a.mjs";\n', "unsupported import"),
    ("export default 1;\n", "unsupported export"),
    ('import { a } from "./missing.mjs";\n', "missing module"),
    ('import { a-b } from "./a.mjs";\n', "cannot inline"),
])
def test_inliner_refuses_what_it_cannot_inline(source, message):
    with pytest.raises(BundleError, match=message):
        inline_modules({"main.mjs": source, "a.mjs": "export const a = 1;\n"}, "main.mjs")


def test_inliner_finds_cycles():
    with pytest.raises(BundleError, match="cycle"):
        inline_modules({"main.mjs": 'import { b } from "./b.mjs";\nexport const a = 1;\n',
                        "b.mjs": 'import { a } from "./main.mjs";\nexport const b = 1;\n'}, "main.mjs")


def modules_in(code: str) -> set[str]:
    return set(re.findall(r"^// ---- ([\w.-]+\.mjs)$", code, re.M))


def test_the_bundles_have_every_module_and_no_network():
    codes = {page: bundle_js(page) for page in BUNDLES}
    modules = {p.name for p in JS_DIR.glob("*.mjs")}
    assert set().union(*map(modules_in, codes.values())) == modules  # each module in some page's bundle
    assert "globalThis.BertvizViews = { ...__bv_main, ...__bv_lesson_host, ...__bv_app };" in codes["app"]
    # The app's page alone talks to its own server, once: a class poll's answers (lesson-poll.mjs, same origin).
    poll_fetch = "pollServer((path, init) => window.fetch(path, init), window.location.origin)"
    assert codes["app"].count(poll_fetch) == 1
    codes["app"] = codes["app"].replace(poll_fetch, "")
    # and once imports gradio's own core module, already loaded by the page (found among its loaded resources, same
    # origin): the module instance whose changeLocale follows a page's ?lang= (app.mjs startLanguage)
    gradio_core = "const loaded = import(core);"
    assert codes["app"].count(gradio_core) == 1
    codes["app"] = codes["app"].replace(gradio_core, "")
    for code in codes.values():
        assert not re.search(r"\bfetch\(|XMLHttpRequest|import\(|require\(|https?://(?!www\.w3\.org/2000/svg)", code)


def test_an_offline_page_carries_the_views_and_none_of_the_hosts(tiny):
    """A Run's page (run.save_html, run.show) is the views alone: none of the corpus, lesson, timeline, widget or app
    code that main.mjs once imported into every page, and smaller by at least what those modules weigh."""
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"])
    page = standalone_html(blob)
    views = modules_in(bundle_js("page"))
    hosts = set().union(*(modules_in(bundle_js(name)) for name in BUNDLES)) - views
    assert {"app.mjs", "corpus-host.mjs", "corpus-app.mjs", "gradio-host.mjs", "lesson.mjs", "lesson-bar.mjs",
            "lesson-app.mjs", "timeline.mjs", "timeline-bar.mjs", "widget-host.mjs"} <= hosts
    assert {"view-lines.mjs", "view-matrix.mjs", "view-overview.mjs", "view-qk.mjs"} <= views
    assert not modules_in(page) & hosts
    # the page as it was: one bundle of every entry
    sources = {p.name: p.read_text(encoding="utf-8") for p in JS_DIR.glob("*.mjs")}
    everything = inline_modules(sources, tuple(dict.fromkeys(e for entries in BUNDLES.values() for e in entries)))
    before = page.replace(_script_text(bundle_js("page")), _script_text(everything))
    weight = sum(len(sources[name].encode()) for name in hosts)
    assert len(before.encode()) - len(page.encode()) >= weight > 100_000


def test_the_views_are_the_registrys(tiny):
    """Python's view= names are js/registry.mjs's url names, read from that file (the one list of views for the
    hosts, the links and this page builder), and every view file there is registered."""
    assert VIEW_NAMES == {"lines": "lines", "matrix": "matrix", "overview": "overview", "query_key": "qk"}
    in_files = {re.search(r'^export const NAME = "(\w+)";', p.read_text(encoding="utf-8"), re.M).group(1)
                for p in JS_DIR.glob("view-*.mjs") if p.name != "view-shell.mjs"}
    assert set(VIEW_NAMES.values()) == in_files
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"])
    assert '{"selection": {"view": "qk"}}' in standalone_html(blob, view="query_key")
    with pytest.raises(ValueError, match="choose one of lines, matrix, overview, query_key"):
        standalone_html(blob, view="qk")


FAKE_VIEW = """export const NAME = "fake";
export const LABEL = "A made-up view";
export function layout(data, state, size) { return { width: size.width, height: 10, boxHeight: 10, drawn: "" }; }
export function paint() { return { labels: [] }; }
export function hit() { return null; }
"""


def test_a_new_view_is_one_file_and_one_registry_line(tmp_path):
    """The page builder and the bundle every host loads pick up a view added as its file and its registry line
    (tests/js/permalink.test.mjs checks the hosts, links and tabs in JavaScript)."""
    js = tmp_path / "js"
    shutil.copytree(JS_DIR, js)
    (js / "view-fake.mjs").write_text(FAKE_VIEW, encoding="utf-8")
    registry = (js / "registry.mjs").read_text(encoding="utf-8")
    registry = re.sub(r"^(import \* as qk from .*)$", r'\1\nimport * as fake from "./view-fake.mjs";', registry,
                      flags=re.M)
    added = re.sub(r'^(\s*\{ name: "qk",.*)$', r'\1\n  { name: "fake", url: "made_up", label: "Made up", scope: "all", module: fake },',
                   registry, flags=re.M)
    (js / "registry.mjs").write_text(added, encoding="utf-8")
    assert view_names(js) == {**VIEW_NAMES, "made_up": "fake"}
    code = inline_modules({p.name: p.read_text(encoding="utf-8") for p in js.glob("*.mjs")}, "main.mjs")
    probe = code + 'console.log(JSON.stringify(BertvizViews.permalink.readLink("?tab=made_up&layer=1").selection));'
    out = subprocess.run(["node"], input=probe, capture_output=True, text=True)  # the bundle is too long for -e
    assert out.stdout.strip() == '{"layer":1,"view":"fake"}', out.stderr
    # a line the page builder cannot read is refused, not skipped
    (js / "registry.mjs").write_text(added.replace('label: "Made up", ', ""),
                                     encoding="utf-8")
    with pytest.raises(BundleError, match="cannot read the view line"):
        view_names(js)
    (js / "registry.mjs").write_text(added.replace('scope: "all", ', ""), encoding="utf-8")  # a view without its scope
    with pytest.raises(BundleError, match="cannot read the view line"):
        view_names(js)


def test_standalone_page_inlines_everything(tiny):
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"])
    qk = encode_query_key(tiny["queries"], tiny["keys"])
    page = standalone_html(blob, qk, title="</title><script>alert(1)</script>")
    assert len(re.findall(r"^<script", page, re.M)) == 4  # payload, query/key, bundle, start (a line each)
    assert base64.b64encode(blob).decode() in page and base64.b64encode(qk).decode() in page
    assert "<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page
    assert not re.search(r"<link|\bsrc=|https?://(?!www\.w3\.org/2000/svg)", page)
    assert 'id="bertviz-query-key"' not in standalone_html(blob)


def test_script_text_cannot_close_its_element():
    from bertviz_app.views.page import _script_text
    assert _script_text('x = "</script><b>"; // <!-- ') == 'x = "<\\/script><b>"; // <\\!-- '


def test_notebook_output_is_an_isolated_frame(tiny):
    blob = encode_payload(tiny["tokens"], tiny["segment_ids"], tiny["special_mask"], tiny["attentions"])
    out = notebook_html(blob, title="A & B")
    assert out.count("<iframe srcdoc=\"") == 1 and out.count("</iframe>") == 1
    assert 'sandbox="allow-scripts allow-downloads"' in out and 'title="A &amp; B"' in out
    srcdoc = re.search(r'<iframe srcdoc="([^"]*)"', out).group(1)
    assert html.unescape(srcdoc) == standalone_html(blob, title="A & B")
    # Outside the frame there is nothing to clash with another output: no ids, no scripts, and one style rule, the
    # same in every output, that hides the static picture meant for untrusted notebooks (test_notebook.py).
    outside = out.replace(srcdoc, "")
    assert "id=" not in outside and "<script" not in outside
    assert re.findall(r"<style>(.*?)</style>", outside) == [".bertviz-static { display: none; }"]


