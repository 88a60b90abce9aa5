// The corpus views' pure functions: the maps decoded as Python wrote them (make_corpus_fixture.py), their colourings,
// the point map's layout, hit tests, brushing and zoom, the heads grid, and the corpus state in the permalink.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { colorCategories, decodeCorpusMap, PALETTE, sentenceIndex, sentenceKey, tokenInSentence }
  from "../../bertviz_app/views/js/corpus-data.mjs";
import { checkedState } from "../../bertviz_app/views/js/corpus-app.mjs";
import { appSource } from "../../bertviz_app/views/js/corpus-host.mjs";
import { readCorpusLink, readLink, writeCorpusLink, writeLink } from "../../bertviz_app/views/js/permalink.mjs";
import * as heads from "../../bertviz_app/views/js/corpus-heads.mjs";
import * as pm from "../../bertviz_app/views/js/corpus-point-map.mjs";
import { missing, setLanguage } from "../../bertviz_app/views/js/i18n.mjs";

const fixture = (name) => new Uint8Array(readFileSync(new URL(`./fixtures/corpus.${name}.bvz`, import.meta.url)));
const SIZE = { width: 400, height: 300, dpr: 1 };

async function qkLayout(state = {}) {
  const map = await decodeCorpusMap(fixture("qk"));
  const colors = colorCategories(map, state.by || "kind");
  return { map, colors, layout: pm.layout(map, { colors, window: state.window, only: state.only ?? null }, SIZE) };
}

test("a query/key map decodes as Python wrote it: tokens, their sentences, pieces and tags", async () => {
  const map = await decodeCorpusMap(fixture("qk"));
  assert.equal(map.kind, "corpus_qk");
  assert.equal(map.points, 8);
  assert.equal(map.tokens, 4);
  assert.deepEqual(Array.from(map.sentenceIds), [7, 12]);
  assert.deepEqual([0, 1, 2, 3].map((t) => map.pieces.get(map.piece[t])), ["bank", "##s", "<b>", "the"]);
  assert.deepEqual(Array.from(map.tag), [0, 0, -1, 1]); // -1: the token has no tag
  assert.deepEqual(map.context(1), ["[CLS]", "<b>", "&amp;", "[SEP]"]);
  // x from 0 to 8 over the bounds: the queries' 0, 1, 2, 3 and the keys' 4, 5, 6, 8
  assert.ok(Math.abs(map.x[1] - 1 / 8) < 1e-4 && map.x[7] === 1 && map.y[0] === 0);
});

test("the token in its sentence is its whole word, marked, with the words around it", async () => {
  const map = await decodeCorpusMap(fixture("qk"));
  assert.deepEqual(tokenInSentence(map, 1), { before: "[CLS] the", word: "banks", after: ". [SEP]" });
  assert.deepEqual(tokenInSentence(map, 2), { before: "[CLS]", word: "<b>", after: "&amp; [SEP]" });
});

test("colourings: query before key, tags with (none), words, positions in order", async () => {
  const map = await decodeCorpusMap(fixture("qk"));
  const kind = colorCategories(map, "kind");
  assert.deepEqual(kind.names, ["query", "key"]);
  assert.deepEqual(Array.from(kind.index), [0, 0, 0, 0, 1, 1, 1, 1]);
  const tag = colorCategories(map, "tag");
  assert.deepEqual(tag.names, ["nns", "at", "(none)"]); // "(none)" after every named one
  assert.deepEqual(tag.counts, [4, 2, 2]);
  assert.deepEqual(colorCategories(map, "position").names, ["1", "2", "3"]);
  assert.equal(colorCategories(map, "word").names[0], "##s"); // a tie of two points each: by name
});

test("past the palette, the rarest categories share one grey 'other'", () => {
  const n = PALETTE.length + 5;
  const map = { kind: "corpus_sentences", points: n, label: Int32Array.from({ length: n }, (_, i) => i),
    prediction: null, labels: { get: (i) => `label ${String(i).padStart(2, "0")}` } };
  const c = colorCategories(map, "label");
  assert.equal(c.names.length, PALETTE.length);
  assert.equal(c.names.at(-1), "other");
  assert.equal(c.counts.at(-1), 6);
  assert.equal(c.colors.at(-1), "#b8b8b8");
});

test("the sentence map: labels, predictions, errors and texts", async () => {
  const map = await decodeCorpusMap(fixture("sentences"));
  assert.equal(map.text(0), "A <b>bold</b> one.");
  assert.equal(map.text(2), "Três.");
  assert.deepEqual(colorCategories(map, "label").names, ["fiction", "news", "(none)"]);
  const error = colorCategories(map, "error");
  assert.deepEqual(error.names, ["right", "wrong", "(unknown)"]);
  assert.deepEqual(Array.from(error.index), [0, 1, 2]);
  const lines = pm.tooltip(pm.layout(map, { colors: error }, SIZE), { point: 1 });
  assert.deepEqual(lines, ["sentence 1 \u00b7 fiction \u00b7 predicted news", "Two."]);
});

test("a sentence map's points by id and by text (spaces as a table shows them, a pair after ' | '), built once",
  async () => {
  const map = await decodeCorpusMap(fixture("sentences"));
  const index = sentenceIndex(map);
  assert.equal(sentenceIndex(map), index); // once per map
  assert.equal(index.byText.get(sentenceKey("  A <b>bold</b>\n one. ")), 0);
  assert.equal(index.byText.get(sentenceKey("Two.")), 1);
  assert.equal(index.byText.get(sentenceKey("Two.", "Three.")), undefined);
  assert.equal(sentenceKey("Two.", " Three. "), "Two. | Three.");
  for (let p = 0; p < map.points; p++) assert.equal(index.byId.get(Number(map.sentenceIds[p])), p);
  // the marked point is ringed while nothing is hovered, and named for automation
  const colors = colorCategories(map, "label");
  const layout = pm.layout(map, { colors, marked: 1 }, SIZE);
  assert.deepEqual(layout.chosen, { point: 1 });
  assert.equal(layout.geometry.marked[0], 1);
  assert.equal(pm.layout(map, { colors }, SIZE).chosen, null);
});

test("the whole map fits the box at one scale for both axes, y up", async () => {
  const { layout } = await qkLayout();
  for (let i = 0; i < 8; i++) {
    assert.ok(layout.sx[i] > 0 && layout.sx[i] < SIZE.width && layout.sy[i] > 0 && layout.sy[i] < SIZE.height);
  }
  // data: x spans 8, y spans 4; on screen the same ratio, and a larger y is higher up
  const dx = layout.sx[7] - layout.sx[0], dy = layout.sy[0] - layout.sy[7];
  assert.ok(Math.abs(dx / dy - 2) < 1e-3);
  assert.equal(layout.grid.count, 8);
});

test("hit finds the nearest point within a few pixels, and nothing farther", async () => {
  const { layout } = await qkLayout();
  assert.deepEqual(pm.hit(layout, layout.sx[5] + 2, layout.sy[5] - 2), { point: 5 });
  assert.equal(pm.hit(layout, layout.sx[5] + pm.HIT_RADIUS + 3, layout.sy[5]), null);
  assert.equal(pm.partner(layout.map, 5), 1); // the same token's query
  assert.deepEqual(pm.tooltip(layout, { point: 5 }), ["key \u00b7 ##s (nns) \u00b7 position 3 \u00b7 sentence 7",
    "[CLS] the [banks] . [SEP]"]);
});

test("a brushed rectangle lists the points inside it, whichever corner it started from", async () => {
  const { layout } = await qkLayout();
  const a = { x: layout.sx[1] - 1, y: layout.sy[3] - 1 }, b = { x: layout.sx[3] + 1, y: layout.sy[1] + 1 };
  assert.deepEqual(Array.from(pm.brush(layout, a, b)), [1, 2, 3]);
  assert.deepEqual(Array.from(pm.brush(layout, b, a)), [1, 2, 3]);
});

test("a brush held in map units lands on the same points after a zoom (the rectangle follows the data)",
  async () => {
    const { map, colors, layout } = await qkLayout();
    const a = { x: layout.sx[1] - 1, y: layout.sy[3] - 1 }, b = { x: layout.sx[3] + 1, y: layout.sy[1] + 1 };
    const held = { a: pm.toMap(layout, a), b: pm.toMap(layout, b) };
    const back = pm.toScreen(layout, held.a);
    assert.ok(Math.abs(back.x - a.x) < 1e-3 && Math.abs(back.y - a.y) < 1e-3);
    const zoomed = pm.layout(map, { colors, window: pm.zoomAt(layout, 2.5, 17, 230) }, SIZE);
    const [a2, b2] = [pm.toScreen(zoomed, held.a), pm.toScreen(zoomed, held.b)];
    assert.ok(Math.abs(Math.abs(b2.x - a2.x) - 2.5 * Math.abs(b.x - a.x)) < 1e-2);
    assert.deepEqual(Array.from(pm.brush(zoomed, a2, b2)), Array.from(pm.brush(layout, a, b)));
  });

test("zooming keeps the point under the pointer in place; panning moves every point alike", async () => {
  const { map, colors, layout } = await qkLayout();
  const window = pm.zoomAt(layout, 3, layout.sx[2], layout.sy[2]);
  assert.equal(window.zoom, 3);
  const zoomed = pm.layout(map, { colors, window }, SIZE);
  assert.ok(Math.abs(zoomed.sx[2] - layout.sx[2]) < 1e-3 && Math.abs(zoomed.sy[2] - layout.sy[2]) < 1e-3);
  assert.ok(Math.abs((zoomed.sx[3] - zoomed.sx[2]) / (layout.sx[3] - layout.sx[2]) - 3) < 1e-3);
  const moved = pm.layout(map, { colors, window: pm.panBy(layout, 10, -5) }, SIZE);
  assert.ok(Math.abs(moved.sx[0] - layout.sx[0] - 10) < 1e-3 && Math.abs(moved.sy[0] - layout.sy[0] + 5) < 1e-3);
  assert.equal(pm.zoomAt(layout, 0.1, 0, 0).zoom, 1); // never smaller than the whole map
});

test("the bitmap puts each point in its colour; a category shown alone greys the others and hides them from hits",
  async () => {
    const { map, colors, layout } = await qkLayout();
    const at = (l, i) => { // the pixel word at point i
      const words = new Uint32Array(l.pixels.data.buffer);
      return words[Math.round(l.sy[i]) * l.pixels.width + Math.round(l.sx[i])];
    };
    assert.equal(at(layout, 0), pm.pixelWord(colors.colors[0]));
    assert.equal(at(layout, 6), pm.pixelWord(colors.colors[1]));
    const keysOnly = pm.layout(map, { colors, only: 1 }, SIZE);
    assert.equal(at(keysOnly, 0), pm.pixelWord("#e4e4e4"));
    assert.equal(at(keysOnly, 6), pm.pixelWord(colors.colors[1]));
    assert.equal(pm.hit(keysOnly, keysOnly.sx[0], keysOnly.sy[0]), null);
    assert.equal(keysOnly.grid.count, 4);
  });

const grid = (subset, base) => {
  const values = (k) => Array.from({ length: 6 }, (_, i) => base + k * 0.01 * i);
  const g = { subset, tokens: 100, role: ["broad", "previous token", "[SEP]", "mixed", "links determiner -> its noun",
    "self"] };
  for (const [k, s] of Object.keys(heads.STATISTICS).entries()) { g[s] = values(k); g[`${s}_spread`] = values(1); }
  return g;
};

test("the heads grid: a tile per head, layers down and heads across; a click names its head", () => {
  const l = heads.layout({ layers: 2, heads: 3, a: grid("all", 0.2), b: null }, { statistic: "cls", layer: 1,
    head: 2 }, { width: 500, maxHeight: 400 });
  assert.equal(l.tiles.length, 6);
  const t = l.tiles[5];
  assert.deepEqual([t.layer, t.head, t.role], [1, 2, "self"]);
  assert.deepEqual(heads.hit(l, t.x + 3, t.y + 3), { layer: 1, head: 2 });
  assert.equal(heads.hit(l, 2, 2), null);
  assert.deepEqual(l.chosen, { layer: 1, head: 2 });
  assert.equal(heads.shortRole("links determiner -> its noun"), "DET\u2192N");
  assert.match(heads.tooltip(l, { layer: 0, head: 1 })[0], /^Layer 0, head 1: previous token$/);
});

test("comparing two subsets colours the difference: blue where the first has more, red where the second does", () => {
  const l = heads.layout({ layers: 2, heads: 3, a: grid("label:news", 0.5), b: grid("label:fiction", 0.3) },
    { statistic: "self" }, { width: 500, maxHeight: 400 });
  assert.ok(l.diverging);
  assert.ok(Math.abs(l.tiles[0].value - 0.2) < 1e-9);
  const [r, , b] = l.tiles[0].color.match(/\d+/g).map(Number);
  assert.ok(b > r);
  assert.ok(heads.tileColor(-0.5, true).startsWith("rgb(2"));
  assert.match(l.caption, /label:news\) minus label:fiction/);
});

test("the corpus state travels in the link beside the attention views' own, each writer keeping the other's", () => {
  const state = { corpus: "brown10k", view: "qk", layer: 3, head: 5, subset: "label:news", versus: null, color: "tag",
    sentence: 0 };
  const search = writeCorpusLink("a=The+cat&layer=1&head=2&tab=lines", state);
  assert.deepEqual(readCorpusLink(search), { corpus: "brown10k", view: "qk", layer: 3, head: 5, subset: "label:news",
    color: "tag", sentence: 0 });
  assert.equal(readCorpusLink(writeCorpusLink("", { ...state, sentence: null })).sentence, undefined);
  assert.deepEqual(readLink(search).selection, { layer: 1, head: 2, view: "lines" });
  const again = writeLink(search, { a: "A dog" }, { layer: 0, head: 1, token: null, view: "matrix" });
  assert.equal(readCorpusLink(again).head, 5);
  assert.equal(readCorpusLink("a=x&layer=1"), null);
});

test("a link's head past the model's, or a subset the corpus lacks, is one sentence and the rest still opens", () => {
  const info = { name: "c", layers: 6, heads: 12, subsets: { label: [["news", 10]] } };
  const out = checkedState(info, { view: "qk", layer: 2, head: 14, subset: "label:poetry" });
  assert.equal(out.state.view, "qk");
  assert.equal(out.state.layer, 2);
  assert.equal(out.state.head, 0);
  assert.equal(out.state.subset, "all");
  assert.deepEqual(out.problems, ["This link asks for head 14, and the corpus's model has 12 heads (0 to 11); "
    + "showing head 0 instead.", "This corpus has no subset label:poetry; showing the whole corpus."]);
  assert.deepEqual(checkedState(info, { subset: "label:news", head: 11 }).problems, []);
  const marked = { ...info, sentences: 5 };
  assert.equal(checkedState(marked, { sentence: 4 }).state.sentence, 4);
  const past = checkedState(marked, { sentence: 5 });
  assert.equal(past.state.sentence, null);
  assert.deepEqual(past.problems, ["This link marks sentence 5, and the corpus has 5 (0 to 4); none is marked."]);
});

test("on a phone the heads grid fits its box: narrower row labels and smaller tiles", () => {
  const a = { subset: "all", tokens: 9, role: Array(72).fill("broad") };
  for (const s of Object.keys(heads.STATISTICS)) { a[s] = Array(72).fill(0.5); a[`${s}_spread`] = Array(72).fill(0.1); }
  const model = { layers: 6, heads: 12, a, b: null }; // the default model's 6 x 12 heads in a phone's 302 px
  const l = heads.layout(model, { statistic: "cls" }, { width: 302, maxHeight: 420 });
  assert.ok(l.width <= 302 && l.left < 64, `${l.width} px wide`);
  assert.equal(heads.layout(model, { statistic: "cls" }, { width: 900, maxHeight: 420 }).left, 64);
  const t = l.tiles[5 * 12 + 11];
  assert.deepEqual(heads.hit(l, t.x + 1, t.y + 1), { layer: 5, head: 11 });
});

test("in Spanish the corpus views speak Spanish and leave the corpus's words alone", async () => {
  setLanguage("es");
  try {
    const past = checkedState({ name: "c", layers: 6, heads: 12, sentences: 5 }, { sentence: 5, subset: "tag:NN" });
    assert.deepEqual(past.problems, ["Este corpus no tiene el subconjunto tag:NN; se muestra el corpus entero.",
      "Este enlace marca la frase 5, y el corpus tiene 5 (de 0 a 4); no se marca ninguna."]);
    const { map, layout } = await qkLayout();
    assert.match(layout.caption, /^Capa \d+, cabeza \d+: consultas y claves de 4 tokens de 2 frases/);
    // the token, its tag and its sentence's words are the corpus's, in no language
    assert.deepEqual(pm.tooltip(layout, { point: 1 }), ["consulta \u00b7 ##s (nns) \u00b7 posición 3 \u00b7 frase 7",
      "[CLS] the [banks] . [SEP]"]);
    assert.equal(map.pieces.get(map.piece[0]), "bank");
    // what the server names in English: a head's role (a linking head's by its relation), a corpus not served
    assert.equal(heads.roleText("previous token"), "token anterior");
    assert.equal(heads.roleText("links determiner -> its noun"), "enlaza determinante -> su sustantivo");
    assert.equal(heads.roleText(""), "");
    assert.deepEqual(appSource({ unavailable: ["brown"] }, null, null, {}).problems,
      ["El corpus brown no está disponible en este servidor (su carpeta falta o está dañada); al operador se le dijo "
        + "por qué cuando arrancó el servidor."]);
    assert.deepEqual(missing(), []);
  } finally { setLanguage("en"); }
  assert.equal(heads.roleText("links determiner -> its noun"), "links determiner -> its noun");
});
