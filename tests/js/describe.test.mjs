// describe.mjs: the views' text alternative from a payload's numbers.
import assert from "node:assert/strict";
import { test } from "node:test";

import { describeSelection, linkRows, matrixRows, relation, topLinks } from "../../bertviz_app/views/js/describe.mjs";

/** A decoded payload of one layer, two heads, over `tokens`, with exact 8-bit codes (max 1: code/255). */
function payload(tokens, heads) {
  const T = tokens.length;
  const codes = new Uint8Array(heads.length * T * T);
  heads.forEach((m, h) => m.forEach((row, i) => row.forEach((v, j) => { codes[(h * T + i) * T + j] = v; })));
  return { length: T, tokens, layers: 1, heads: heads.length, key: "k",
    sets: { attention: { codes, max: 1, perHead: true, rowsSumToOne: false } } };
}

const TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"];
// head 0: every token looks at the one before it ([CLS] at itself); head 1: every token at [SEP]
const previous = TOKENS.map((_, i) => TOKENS.map((__, j) => (j === Math.max(0, i - 1) ? 204 : 0)));
const sep = TOKENS.map(() => TOKENS.map((__, j) => (j === 4 ? 255 : 0)));

test("a head's habit and the selected token's strongest link, in one sentence", () => {
  const p = payload(TOKENS, [previous, sep]);
  const said = describeSelection(p, { layer: 0, head: 0, token: 2 });
  assert.match(said, /^Layer 0, head 0: most tokens attend to the previous token \(3 of 5\);/);
  assert.match(said, /‘cat’ \(token 2\) attends most to ‘the’ \(token 1, 0\.80\)\.$/);
  assert.match(describeSelection(p, { layer: 0, head: 1, token: null }),
    /head 1: most tokens attend to \[SEP\] \(5 of 5\); the strongest link: ‘\[CLS\]’ \(token 0\) attends most to ‘\[SEP\]’/);
});

test("no habit shared by half the rows is said as such", () => {
  const mixed = TOKENS.map((_, i) => TOKENS.map((__, j) => (j === (i * 2) % 5 ? 100 : 0)));
  assert.match(describeSelection(payload(TOKENS, [mixed]), { layer: 0, head: 0, token: 1 }), /no single habit/);
});

test("the tables hold the same numbers as the matrix", () => {
  const p = payload(TOKENS, [previous, sep]);
  const m = matrixRows(p, { layer: 0, head: 0 });
  assert.equal(m.header.length, 6);
  assert.deepEqual(m.rows[2], ["2: cat", "0.00", "0.80", "0.00", "0.00", "0.00"]);
  const links = linkRows(p, { layer: 0, head: 0, token: 3 });
  assert.deepEqual(links.rows[0], ["1", "2: cat", "0.80"]);
  assert.equal(links.rows.length, 5);
});

test("relations and the order of links", () => {
  assert.equal(relation(TOKENS, 2, 2), "itself");
  assert.equal(relation(TOKENS, 4, 4), "[SEP]");
  assert.equal(relation(TOKENS, 2, 3), "the next token");
  assert.equal(relation(TOKENS, 1, 4), "[SEP]");
  assert.equal(relation(TOKENS, 1, 3), null);
  const links = topLinks(new Float32Array([0.1, 0.5, 0.5, 0.2]), 2, 1, 2);
  assert.deepEqual(links.map((l) => [l.to, l.weight.toFixed(2)]), [[0, "0.50"], [1, "0.20"]]);
});

test("a plotly figure's name is its title and its axes' titles, markup out", async () => {
  const { figureName } = await import("../../bertviz_app/views/js/figure-names.mjs");
  assert.equal(figureName({ title: { text: "Position similarity<br><sub>cosine</sub>" },
    xaxis: { title: { text: "position" } }, yaxis: { title: "position" }, xaxis2: { title: { text: "" } } }),
  "Position similarity cosine; x axis: position; y axis: position");
  assert.equal(figureName(undefined), "");
});
