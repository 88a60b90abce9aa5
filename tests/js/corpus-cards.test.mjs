// What each layer knows and the heads scatter (corpus-cards.mjs): where their points fall, what a pointer hits and
// what the tooltip says, from answers shaped as corpus/browser.py sends them.

import assert from "node:assert/strict";
import { test } from "node:test";

import { dashPattern, extent, headsScatter, probeChart, roleColors } from "../../bertviz_app/views/js/corpus-cards.mjs";
import { CATEGORIES, PALETTES } from "../../bertviz_app/views/js/palette.mjs";

const SIZE = { width: 400, height: 300 };

function grid(subset, shift) {
  const n = 6; // 2 layers x 3 heads
  const values = (k) => Array.from({ length: n }, (_, i) => (i === 4 ? null : 0.1 * i + shift + k));
  const out = { subset, tokens: 100, role: ["previous token", "broad", "broad", "[CLS]", "mixed", "broad"] };
  for (const [k, s] of ["entropy_ratio", "distance", "cls", "sep", "self", "previous", "next", "punctuation"].entries()) {
    out[s] = values(k / 100);
  }
  return out;
}

test("a head's point sits at its two statistics, a click there is that head, and a head without them is left out", () => {
  const l = headsScatter.layout({ layers: 2, heads: 3, a: grid("all", 0.1), b: null },
    { sx: "previous", sy: "entropy_ratio", layer: 1, head: 0 }, SIZE);
  assert.equal(l.points.length, 5); // head 1-1 has no value
  assert.deepEqual(l.geometry.points.map(([layer, head]) => [layer, head]), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 2]]);
  const p = l.points.find((q) => q.layer === 1 && q.head === 2);
  assert.ok(Math.abs(l.X(p.vx) - p.x) < 1e-9 && Math.abs(l.Y(p.vy) - p.y) < 1e-9);
  assert.deepEqual(headsScatter.hit(l, p.x + 3, p.y - 2), { layer: 1, head: 2 });
  assert.equal(headsScatter.hit(l, 2, 2), null);
  assert.deepEqual([l.chosen.layer, l.chosen.head], [1, 0]);
  assert.equal(headsScatter.tooltip(l, { layer: 1, head: 2 })[0], "Layer 1, head 2: broad");
  // the axes span the heads' own range: the largest previous share at the right, the smallest at the left
  const xs = l.points.map((q) => q.x);
  assert.ok(Math.min(...xs) > 40 && Math.max(...xs) < SIZE.width - 10 && Math.max(...xs) - Math.min(...xs) > 250);
  assert.equal(l.colors.get("broad"), roleColors(grid("all", 0).role).get("broad"));
});

test("in the colour-blind palette the roles take its categorical colours, and the legend's lines their dashes", () => {
  const l = headsScatter.layout({ layers: 2, heads: 3, a: grid("all", 0.1), b: null },
    { sx: "previous", sy: "entropy_ratio", layer: 1, head: 0 }, { ...SIZE, palette: PALETTES.colorblind });
  assert.deepEqual([...l.colors.values()], CATEGORIES.colors.slice(0, 4)); // previous token, broad, [CLS], mixed
  assert.equal(dashPattern("#000", []), "#000");
  assert.equal(dashPattern("red", [6, 4]), "repeating-linear-gradient(90deg,red 0px 6px,transparent 6px 10px)");
});

test("with a second subset each head has a ring at its values and the tooltip names both", () => {
  const l = headsScatter.layout({ layers: 2, heads: 3, a: grid("label:news", 0.1), b: grid("label:fiction", 0.3) },
    { sx: "cls", sy: "self" }, SIZE);
  assert.ok(l.points.every((p) => p.bx !== undefined));
  assert.equal(l.drawn, "scatter:label:news vs label:fiction:cls:self");
  assert.match(headsScatter.tooltip(l, { layer: 0, head: 0 })[2], /^label:fiction: /);
  assert.deepEqual(extent([0.5, 0.5]), [0.49, 0.51]); // one value still gets an axis
  assert.deepEqual(extent([0.01, 0.5, null]).map((v) => +v.toFixed(4)), [0, 0.5294]); // a share's axis from 0, not -0.02
});

test("the probe chart draws each series it has, and a layer's column answers its numbers", () => {
  const answer = { target: "tag", layer: [0, 1, 2], accuracy: [0.8, 0.9, 0.85], control_accuracy: [0.75, 0.6, 0.6],
    selectivity: [0.05, 0.3, 0.25], majority: [0.12, 0.12, 0.12], items: 1000, held_out: 200, classes: 40 };
  const l = probeChart.layout(answer, {}, SIZE);
  assert.deepEqual(l.series.map((s) => s.key), ["accuracy", "control_accuracy", "selectivity", "majority"]);
  assert.match(l.caption, /trained on 800 items and scored on 200 .* Best: layer 1 \(90\.0%\)/);
  const [, x1] = l.geometry.layers[1];
  assert.deepEqual(probeChart.hit(l, x1 + 10), { index: 1 });
  assert.deepEqual(probeChart.tooltip(l, { index: 1 }).slice(0, 2), ["Layer 1", "accuracy: 0.900"]);
  const label = probeChart.layout({ ...answer, control_accuracy: [null, null, null], selectivity: [null, null, null] },
    {}, SIZE);
  assert.deepEqual(label.series.map((s) => s.key), ["accuracy", "majority"]); // a sentence label has no control
  assert.ok(!/control task gives/.test(label.caption));
});
