// Every view's layout, paint and hit functions, called with chosen inputs: the fixture payload (2 layers x 3 heads,
// 9 tokens, sentence B from token 6), a selection state, a box size. Paint goes through the SVG recorder, so a test
// reads what was drawn as SVG elements.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createCache, layerMatrix } from "../../bertviz_app/views/js/data.mjs";
import { decodePayload, decodeQueryKey } from "../../bertviz_app/views/js/decode.mjs";
import { constrain } from "../../bertviz_app/views/js/selection.mjs";
import { formatNumber, headColor, SELECTED_COLOR } from "../../bertviz_app/views/js/scale.mjs";
import { createSvgContext } from "../../bertviz_app/views/js/svg.mjs";
import { HEAD_MARKS } from "../../bertviz_app/views/js/palette.mjs";
import { themeOf } from "../../bertviz_app/views/js/theme.mjs";
import * as lines from "../../bertviz_app/views/js/view-lines.mjs";
import * as matrix from "../../bertviz_app/views/js/view-matrix.mjs";
import * as overview from "../../bertviz_app/views/js/view-overview.mjs";
import * as qk from "../../bertviz_app/views/js/view-qk.mjs";
import { activeTarget, currentLock } from "../../bertviz_app/views/js/view-shell.mjs";
import { close, expected, payloadBytes, queryKeyBytes, termsQueryKeyBytes } from "./helpers.mjs";

const measure = (font, text) => text.length * 8;
const size = (width, maxHeight = 600) => ({ width, maxHeight, measure });
const box = (l) => ({ x: 0, y: 0, width: Math.min(l.width, 1280), height: l.boxHeight, dpr: 1 });
const focus = (l, hover = null, ui = {}) => ({ hover, locked: l.locked, active: activeTarget(hover, l.locked), ui });

async function fixture({ queryKey = false, terms = false } = {}) {
  const payload = await decodePayload(payloadBytes());
  const blob = terms ? termsQueryKeyBytes(terms) : queryKeyBytes();
  if (queryKey) payload.queryKey = await decodeQueryKey(blob, payload);
  return { payload, cache: createCache(), silence: false };
}
const state = (data, patch = {}) => constrain({ zoom: "labels", ...patch }, data.payload);

function record(view, l, f, v = box(l)) {
  const ctx = createSvgContext(v.width, v.height, { measure, imageUrl: () => "data:image/png;base64," });
  const done = view.paint(ctx, l, v, f);
  return { svg: ctx.toString(), done };
}
const strokes = (svg) => [...svg.matchAll(/<path d="[^"]*" fill="none" stroke="([^"]+)"/g)].map((m) => m[1]);
const texts = (svg) => [...svg.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);

test("the shell decides hover-or-locked once: the pointer wins, a view's lock holds for its own row", () => {
  assert.deepEqual(activeTarget({ key: 2 }, { key: 5 }), { key: 2 });
  assert.deepEqual(activeTarget(null, { key: 5 }), { key: 5 });
  assert.equal(activeTarget(null, null), null);
  const lock = { target: { key: 3 }, scope: "0|1|4" };
  assert.deepEqual(currentLock(lock, { lockScope: "0|1|4" }), { key: 3 });
  assert.equal(currentLock(lock, { lockScope: "1|1|4" }), null); // another query row: the lock is gone
});

test("lines: the two columns stay a few hundred pixels apart in a wide box, centered; a phone gets what is left",
  async () => {
    const data = await fixture();
    const wide = lines.layout(data, state(data), size(1280));
    assert.ok(wide.xR - wide.xL <= lines.MAX_GAP, `gap ${wide.xR - wide.xL}`);
    assert.ok(wide.xR - wide.xL >= 300);
    assert.equal(wide.width, 1280);
    assert.ok(Math.abs(wide.xL + wide.xR - wide.width) < 1e-9); // as far from either edge
    const phone = lines.layout(data, state(data), size(360));
    assert.ok(phone.xR - phone.xL < lines.MAX_GAP && phone.xR - phone.xL >= 120);
    assert.ok(phone.width <= 360 || phone.xR - phone.xL === 120);
    assert.equal(phone.height, 44 + 9 * phone.pitch + 8);
    assert.deepEqual(wide.geometry, { top: 44, pitch: wide.pitch, left: wide.xL, right: wide.xR, labelPx: 15 });
    assert.match(wide.caption, /Each line joins a token/);
  });

test("lines: one head is one color, whatever its number; all heads color each head", async () => {
  const data = await fixture();
  for (const head of [0, 2]) {
    const l = lines.layout(data, state(data, { head }), size(900));
    const { svg } = record(lines, l, focus(l));
    const colors = new Set(strokes(svg));
    assert.deepEqual([...colors], [lines.LINE_COLOR], `head ${head}: ${[...colors]}`);
  }
  const all = lines.layout(data, state(data, { head: "all" }), size(900));
  const colors = new Set(strokes(record(lines, all, focus(all)).svg));
  assert.deepEqual([...colors].sort(), [0, 1, 2].map(headColor).sort());
  assert.deepEqual(lines.lineStyle({ head: 7 }, { head: 7 }), { color: lines.LINE_COLOR, dash: [] }); // not gray
});

test("lines: in the colour-blind palette all heads take its colours, and past them a dash, in the lines and the key",
  async () => {
    const data = await fixture();
    const theme = themeOf("default", "colorblind");
    const all = lines.layout(data, state(data, { head: "all" }), { ...size(900), theme });
    const { svg } = record(lines, all, focus(all));
    // three heads' lines and three line samples in the key, all solid
    assert.deepEqual([...new Set(strokes(svg))].sort(), HEAD_MARKS.colors.slice(0, 3).sort());
    assert.doesNotMatch(svg, /stroke-dasharray/);
    // BERT-base's head 5 shares head 1's colour: dashed, in line widths
    assert.deepEqual(lines.lineStyle({ head: "all" }, { head: 5 }, theme), { color: HEAD_MARKS.colors[1],
      dash: HEAD_MARKS.dashes[1] });
    assert.deepEqual(lines.lineStyle({ head: 5 }, { head: 5 }, theme), { color: lines.LINE_COLOR, dash: [] });
  });

test("lines: a selected token draws only its lines, its label marked and the far side's weights written",
  async () => {
    const data = await fixture();
    const l = lines.layout(data, state(data, { head: 1, token: 4 }), size(900));
    assert.deepEqual(l.locked, { side: "left", index: 4 });
    const { svg, done } = record(lines, l, focus(l));
    const drawn = [...svg.matchAll(/<path d="([^"]*)" fill="none"/g)].map((m) => m[1]).join("");
    const starts = [...drawn.matchAll(/M([\d.]+) ([\d.]+)/g)].map((m) => Number(m[2]));
    assert.ok(starts.length > 0 && starts.every((y) => Math.abs(y - (44 + 4.5 * l.pitch)) < 0.01)); // all from row 4
    assert.ok(svg.includes(`fill="${SELECTED_COLOR}"`));
    assert.ok(texts(svg).includes("&lt;b&gt;")); // the token, as text
    assert.ok(texts(svg).some((t) => /^0\.\d\d$/.test(t))); // weights beside the attended labels
    assert.equal(done.labels, 18); // every label of both columns fits
    // Hover wins over the lock: hovering row 2 on the right draws lines into row 2.
    const hovered = record(lines, l, focus(l, { side: "right", index: 2 })).svg;
    const ends = [...hovered.matchAll(/L([\d.]+) ([\d.]+)/g)].map((m) => Number(m[2]));
    assert.ok(ends.length > 0 && ends.every((y) => Math.abs(y - (44 + 2.5 * l.pitch)) < 0.01));
  });

test("lines: hit finds the token row on either side, the head key in the band, nothing in between", async () => {
  const data = await fixture();
  const l = lines.layout(data, state(data), size(900));
  const y = (i) => 44 + (i + 0.5) * l.pitch;
  assert.deepEqual(lines.hit(l, l.xL - 20, y(4)), { side: "left", index: 4 });
  assert.deepEqual(lines.hit(l, l.xR + 20, y(7)), { side: "right", index: 7 });
  assert.equal(lines.hit(l, l.xL - 20, y(9)), null); // below the last row
  assert.equal(lines.hit(l, l.xL - 20, 10), null); // the band, one head: no key
  const all = lines.layout(data, state(data, { head: "all" }), size(900));
  const key = lines.legendKeys(all)[2];
  assert.deepEqual(lines.hit(all, key.x + 3, 17), { legend: 2, hover: false });
  // Scrolled down by 100 px, the band still sits at the box's top.
  assert.deepEqual(lines.hit(all, key.x + 3, 117, { x: 0, y: 100 }), { legend: 2, hover: false });
  assert.deepEqual(lines.click(all, { legend: 2, hover: false }, all.state), { patch: { head: 2 } });
  // BERT-base's 12 heads: in a box as wide as the lines the key keeps clear of both titles; where it cannot (a phone)
  // it takes the band alone, every entry inside the box and none over another
  for (const width of [1280, 900, 346]) {
    const twelve = { ...lines.layout(data, state(data, { head: "all" }), size(width)), heads: 12 };
    const keys = lines.legendKeys(twelve);
    const end = keys.at(-1).x + keys.at(-1).w;
    assert.ok(keys.every((k, i) => i === 0 || k.x >= keys[i - 1].x + keys[i - 1].w), `${width}`);
    if (keys[0].alone) assert.ok(keys[0].x >= 0 && end <= twelve.width, `${width}: ${keys[0].x}..${end}`);
    else assert.ok(end <= twelve.width - twelve.x0 - 8 - 120 && keys[0].x >= twelve.x0 + 8 + 120, `${width}`);
    const { svg } = record(lines, twelve, focus(twelve));
    assert.equal(texts(svg).includes("attended token"), !keys[0].alone, `${width}`);
  }
  assert.ok(lines.legendKeys({ ...lines.layout(data, state(data, { head: "all" }), size(346)), heads: 12 })[0].alone);
  const s = state(data);
  assert.deepEqual(lines.click(l, { side: "right", index: 7 }, s), { patch: { token: 7, direction: "to" } });
  assert.deepEqual(lines.click(l, { side: "left", index: 4 }, { ...s, token: 4, direction: "from" }),
    { patch: { token: null } }); // a second click lets go
});

test("labels grow with presenter mode's larger type and the room the rows have, never past the rows", async () => {
  const data = await fixture();
  const tall = { ...size(1280, 500), labelMax: 28 };
  const normal = lines.layout(data, state(data), size(1280, 500));
  const presenter = lines.layout(data, state(data), tall);
  assert.equal(normal.type.px, 15); // without the host asking, the type stays where it was
  assert.ok(presenter.type.px >= 24 && presenter.type.px <= 28, `${presenter.type.px}`);
  assert.ok(presenter.pitch >= presenter.type.pitch && presenter.labelW > normal.labelW);
  const drawn = record(lines, presenter, focus(presenter)).svg;
  assert.match(drawn, new RegExp(`font-size="${presenter.type.px}"`));
  assert.ok(presenter.height <= 500); // every row still in the box
  const short = lines.layout(data, state(data), { ...size(1280, 44 + 9 * 18 + 8), labelMax: 28 }); // no room: 15 px
  assert.equal(short.type.px, 15);
  const small = matrix.layout(data, state(data), size(700, 500));
  const big = matrix.layout(data, state(data), { ...size(700, 500), labelMax: 28 });
  assert.equal(small.type.px, 15);
  assert.ok(big.type.px > 15 && big.cell >= big.type.pitch, `${big.type.px} in cells of ${big.cell}`);
  assert.ok(big.top + 9 * big.cell + 8 <= 500 + 1e-9);
  const vectors = await fixture({ queryKey: true });
  const qkState = state(vectors, { layer: 1, head: 2, token: 4 });
  assert.equal(qk.layout(vectors, qkState, size(900, 500)).type.px, 15);
  const grown = qk.layout(vectors, qkState, { ...size(900, 500), labelMax: 28 });
  assert.ok(grown.type.px > 15 && grown.pitch >= grown.type.pitch && grown.height <= 500, `${grown.type.px}`);
});

/** The rectangles of the texts an SVG recording holds: plain or rotated a quarter turn (the column labels). */
function textBoxes(svg) {
  const text = new RegExp('<text x="([^"]+)" y="([^"]+)" font-size="([^"]+)"( transform="matrix\\(([^)]+)\\)")?[^>]*'
    + 'text-anchor="(\\w+)"( dominant-baseline="(\\w+)")?[^>]*>([^<]*)</text>', "g");
  return [...svg.matchAll(text)].map((m) => {
    const [x, y, px] = [m[1], m[2], m[3]].map(Number);
    const w = measure("", m[9]);
    const baseline = m[8] || "alphabetic";
    const top = baseline === "central" ? -px / 2 : baseline === "hanging" ? 0 : -px;
    const start = m[6] === "end" ? -w : m[6] === "middle" ? -w / 2 : 0;
    if (m[5]) { // matrix(0 -1 1 0 tx ty): the text runs upwards from (tx, ty)
      const [, , , , tx, ty] = m[5].split(" ").map(Number);
      return { text: m[9], x: tx + y + top, y: ty - x - start - w, width: px, height: w };
    }
    return { text: m[9], x: x + start, y: y + top, width: w, height: px };
  });
}
const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

test("matrix: the color key never overlaps a token label, whatever the label band and the type", async () => {
  const data = await fixture();
  for (const [width, labelMax] of [[700, undefined], [1280, undefined], [360, undefined], [1280, 28]]) {
    for (const scale of ["sqrt", "linear"]) {
      const l = matrix.layout(data, state(data, { scale }), { ...size(width, 500), labelMax });
      const { svg } = record(matrix, l, focus(l));
      const boxes = textBoxes(svg);
      const key = boxes.filter((b) => /^(0|0\.25|1|square-root|scale|square-root scale|linear|linear scale)$/
        .test(b.text));
      const labels = boxes.filter((b) => data.payload.tokens.includes(b.text));
      assert.ok(key.length >= 2 && labels.length >= 9, `${width} ${scale}: ${key.length} key texts`);
      if (l.key) key.push({ text: "bar", x: l.key.x, y: l.key.y, width: l.key.w, height: l.key.h });
      for (const k of key) {
        for (const label of labels) assert.ok(!overlaps(k, label), `${width} ${scale}: ${k.text} over ${label.text}`);
      }
    }
  }
});

test("matrix: a host that gives it the screen (presenter mode) has the columns fill the width the rows leave", async () => {
  const data = await fixture(); // 9 tokens
  const square = matrix.layout(data, state(data, { head: 0 }), size(1200, 300));
  assert.equal(square.cellW, square.cell); // without the host asking: square cells, fitted to the height
  const filled = matrix.layout(data, state(data, { head: 0 }), { ...size(1200, 300), labelMax: 28, fillWidth: true });
  assert.ok(filled.top + 9 * filled.cell + 8 <= 300 + 1e-9); // every row still in the box
  assert.ok(filled.cellW > filled.cell && filled.cellW <= 3 * filled.cell, `${filled.cellW} x ${filled.cell}`);
  // as wide as the box lets it, or three rows' height a column (a matrix of two tokens is not a banner)
  assert.ok(Math.abs(filled.left + 9 * filled.cellW + 8 - 1200) < 1e-6 || filled.cellW === 3 * filled.cell);
  assert.equal(filled.width, filled.left + 9 * filled.cellW + 8);
  assert.deepEqual(matrix.hit(filled, filled.left + 7.5 * filled.cellW, filled.top + 1.5 * filled.cell),
    { row: 1, col: 7 });
  const zoomed = matrix.layout(data, state(data, { head: 0, zoom: "2" }), { ...size(1200, 300), fillWidth: true });
  assert.equal(zoomed.cellW, zoomed.cell); // a zoom keeps the squares it asked for
  assert.match(record(matrix, filled, focus(filled)).svg, new RegExp(`<svg [^>]* width="${Math.round(filled.width)}"`));
});

test("matrix: cells fit the box, the bitmap has one pixel a cell, hit and click pick a row's token", async () => {
  const data = await fixture();
  const l = matrix.layout(data, state(data, { zoom: "fit", head: 0 }), size(700, 500));
  assert.ok(l.cell <= 32 && l.top + 9 * l.cell + 8 <= 500 + 1e-9);
  assert.equal(l.pixels.width, 9);
  assert.equal(l.pixels.data.length, 9 * 9 * 4);
  const { svg } = record(matrix, l, focus(l, { row: 6, col: 2 }));
  assert.match(svg, /<image id="image0" width="9" height="9"/);
  assert.match(svg, /stroke-dasharray="6 4"/); // where sentence B starts
  assert.match(svg, /stroke="#111"/); // the hovered cell
  assert.deepEqual(matrix.hit(l, l.left + 2.5 * l.cell, l.top + 6.5 * l.cell), { row: 6, col: 2 });
  assert.deepEqual(matrix.hit(l, 5, l.top + 3.5 * l.cell), { row: 3, col: -1 }); // a row label
  assert.equal(matrix.hit(l, 5, 5), null); // the corner
  assert.deepEqual(matrix.click(l, { row: 6, col: 2 }), { patch: { token: 6, direction: "from" } });
  assert.deepEqual(matrix.click(l, { row: -1, col: 3 }), { patch: { token: 3, direction: "to" } });
  assert.match(matrix.tooltip(l, { row: 6, col: 2 })[1], /^weight 0\.\d\d/);
  const picked = matrix.layout(data, state(data, { token: 4, direction: "to" }), size(700));
  assert.deepEqual(picked.locked, { axis: "col", index: 4 });
  assert.ok(record(matrix, picked, focus(picked)).svg.includes(`stroke="${SELECTED_COLOR}"`));
});

test("overview: one tile per head, hit over tiles and labels, a click opens a head or picks it", async () => {
  const data = await fixture();
  const s = state(data, { layer: 1, head: 2 });
  const l = overview.layout(data, s, size(700));
  assert.equal(l.tile, 104); // capped: 3 heads in 700 px
  const [x, y] = overview.tileOrigin(l, 1, 2);
  assert.deepEqual(overview.hit(l, x + 10, y + 10), { layer: 1, head: 2 });
  assert.deepEqual(overview.hit(l, 10, y + 10), { layer: 1, head: -1 }); // the layer's label
  assert.deepEqual(overview.hit(l, x + 10, 5), { layer: -1, head: 2 }); // the head number
  assert.equal(overview.hit(l, 5, 5), null);
  assert.deepEqual(overview.click(l, { layer: 0, head: 1 }, s, { env: { detailView: () => "matrix" } }),
    { patch: { layer: 0, head: 1, view: "matrix" } });
  assert.equal(overview.click(l, { layer: 0, head: -1 }, s), null); // a label opens nothing
  assert.deepEqual(overview.click(l, { layer: 0, head: -1 }, s, { ui: { picking: true } }),
    { patch: { silenced: [[0, 0], [0, 1], [0, 2]] } });
  const { svg } = record(overview, l, focus(l, { layer: 0, head: 0 }));
  assert.equal((svg.match(/<image /g) || []).length, 1); // one atlas, in the file once
  assert.equal((svg.match(/<use href="#image0"/g) || []).length, 6); // every tile a part of it
  assert.ok(svg.includes(`stroke="${SELECTED_COLOR}" stroke-width="3.5"`)); // the selected head
  assert.ok(texts(svg).includes("layer 1") && texts(svg).includes("head 0"));
  // The keyboard cursor counts only while the picture has the focus; labels only while picking.
  assert.equal(overview.pointedAt({ active: null, ui: { cursor: { layer: 1, head: 1 } } }), null);
  assert.deepEqual(overview.pointedAt({ active: null, ui: { focused: true, cursor: { layer: 1, head: 1 } } }),
    { layer: 1, head: 1 });
  assert.equal(overview.pointedAt({ active: { layer: 1, head: -1 }, ui: {} }), null);
});

test("query/key: hidden until the vectors are there; then the strongest key is explained until one is clicked",
  async () => {
    const bare = await fixture();
    assert.equal(qk.layout(bare, state(bare), size(900)).hidden, true);
    const data = await fixture({ queryKey: true });
    const l = qk.layout(data, state(data, { layer: 1, head: 2, token: 4 }), size(900));
    assert.equal(l.row.token, 4);
    const strongest = l.row.weights.indexOf(Math.max(...l.row.weights));
    assert.deepEqual(l.locked, { key: strongest });
    assert.equal(l.lockScope, "1|2|4");
    assert.equal(l.drawn, "layer=1 head=2 query=4");
    const y = (j) => 86 + (j + 0.5) * l.pitch;
    assert.deepEqual(qk.hit(l, 100, y(3)), { key: 3 });
    assert.equal(qk.hit(l, 100, 20), null); // the header
    assert.deepEqual(qk.click(l, { key: 3 }), { lock: { key: 3 } });
    const { svg, done } = record(qk, l, focus(l));
    assert.ok(texts(svg).some((t) => t.startsWith("query q of \u201c&lt;b&gt;\u201d")));
    assert.equal(done.labels, 9);
    assert.match(qk.explain(l, 3)[0], /^Query \u201c<b>\u201d \(token 4\) and key \u201c##able\u201d \(token 3\):$/);
    // No token selected: the first ordinary token's query.
    assert.equal(qk.queryToken(data.payload, state(data)), 1);
    // A new row scrolls to its strongest key when it is out of sight; the same row does not move.
    assert.equal(qk.reveal(l, l, { x: 0, y: 0, width: 900, height: 300 }), null);
    const far = qk.reveal(l, null, { x: 0, y: 5000, width: 900, height: 300 });
    assert.ok(far && far.y < 5000);
  });

test("lines: a newly selected token out of sight scrolls into the box; the same token or one in sight does not",
  async () => {
    const data = await fixture();
    const l = lines.layout(data, state(data, { token: 7 }), size(900, 120)); // a box of a few rows
    const top = { x: 0, y: 0, width: 900, height: 120 };
    const to = lines.reveal(l, null, top);
    assert.ok(to && to.y > 0, "token 7 lies below a box of a few rows");
    const { top: first, pitch } = l.geometry, y = first + 7 * pitch;
    assert.ok(y >= to.y + 34 && y + pitch <= to.y + top.height, "its row is in sight after the scroll");
    assert.equal(lines.reveal(l, l, top), null); // the same token: the visitor's scroll stays
    const near = lines.layout(data, state(data, { token: 0 }), size(900, 120));
    assert.equal(lines.reveal(near, null, top), null); // already in sight
    assert.equal(lines.reveal(lines.layout(data, state(data), size(900, 120)), null, top), null); // no token
  });

test("query/key with the model's three score terms: each a column of its own, named as the model names them, "
  + "their sum the score", async () => {
  const data = await fixture({ queryKey: true, terms: "terms" });
  const [layer, head, token] = expected.query_at;
  const l = qk.layout(data, state(data, { layer, head, token }), size(1100));
  const want = expected.terms;
  assert.deepEqual(l.row.terms.map((t) => t.name), want.names);
  l.row.terms.forEach((term, t) => close(term.values, want.terms[t], 1e-5, term.name));
  close(l.row.scores, want.scores, 1e-5, "scores");
  close(l.row.weights, want.weights, 1e-6, "weights");
  for (let j = 0; j < l.row.scores.length; j++) { // the score is the terms' sum, nothing assumed beside them
    const sum = l.row.terms.reduce((total, term) => total + term.values[j], 0);
    assert.ok(Math.abs(sum - l.row.scores[j]) < 1e-5);
  }
  // Two more term columns and the sum push the bar to the right of where a one-term model's stands.
  const bert = await fixture({ queryKey: true });
  const plain = qk.layout(bert, state(bert, { layer, head, token }), size(1100));
  assert.equal(plain.row.terms.length, 1);
  assert.equal(l.xScore - l.xDot, 4 * 76); // q.k, three terms, then the sum
  assert.equal(plain.xScore - plain.xDot, 64); // q.k, then its one term, the score
  const { svg, done } = record(qk, l, focus(l));
  const drawn = texts(svg);
  for (const header of ["q.k", "c2p", "p2c", "score", "= sum"]) assert.ok(drawn.includes(header), header);
  assert.ok(!texts(record(qk, plain, focus(plain)).svg).includes("c2p"));
  assert.equal(done.labels, 9);
  for (let j = 0; j < 9; j++) { // each row's terms, as numbers
    assert.ok(want.terms.every((term) => drawn.includes(formatNumber(term[j], 1))), j);
  }
  assert.deepEqual(qk.hit(l, 100, 86 + 2.5 * l.pitch), { key: 2 });
  const sum = qk.explain(l, 2)[1];
  assert.match(sum, /the model's score terms q\.k = .*, c2p = .*, p2c = .* add up to the score /);
  assert.match(qk.tooltip(l, { key: 2 })[2], /^q\.k .*, c2p .*, p2c /);
  assert.match(l.caption, /a sum of 3 terms \(q\.k, c2p, p2c\)/);
  assert.doesNotMatch(plain.caption, /terms/);
});

test("query/key without the model's terms (a long input, a page with vectors only): no scores are made up, the "
  + "weights are the model's own row", async () => {
  const [layer, head, token] = expected.query_at;
  const data = await fixture({ queryKey: true, terms: "none" });
  assert.equal(data.payload.queryKey.terms, null);
  const l = qk.layout(data, state(data, { layer, head, token }), size(1100));
  assert.equal(l.row.terms, null);
  assert.equal(l.row.scores, null);
  const model = layerMatrix(data.payload.sets.attention, 9, data.payload.heads, layer, head).subarray(token * 9,
    (token + 1) * 9);
  close(l.row.weights, model, 0);
  assert.match(qk.explain(l, 2)[2], /score terms did not come with these vectors/);
  assert.equal(record(qk, l, focus(l)).done.labels, 9);
});

test("matrix: the caption names sentence B only when the input has one", async () => {
  const data = await fixture();
  assert.match(matrix.layout(data, state(data), size(700, 500)).caption, /where sentence B starts/);
  const single = { ...data, payload: { ...data.payload, segments: new Uint8Array(data.payload.segments.length) } };
  assert.doesNotMatch(matrix.layout(single, state(single), size(700, 500)).caption, /sentence B/);
});
