import assert from "node:assert/strict";
import { test } from "node:test";

import { defaultZoom, FIT_LABEL_PX, LABEL_PITCH, labelType, pitchFor, thinLabels, truncate, visibleRange, weightFloor } from
  "../../bertviz_app/views/js/layout.mjs";

test("pitch: fit the box, zoom by a factor, or make room for every label", () => {
  assert.equal(pitchFor(32, 640, "fit"), 20);
  assert.equal(pitchFor(512, 512, "fit"), 1);
  assert.equal(pitchFor(512, 100, "fit", { min: 2 }), 2);
  assert.equal(pitchFor(4, 640, "fit", { max: 28 }), 28);
  assert.equal(pitchFor(512, 512, "4"), 4);
  assert.equal(pitchFor(512, 512, "labels"), LABEL_PITCH);
  assert.equal(defaultZoom(32, 500), "labels");
  assert.equal(defaultZoom(512, 500), "fit");
});

test("visible rows are those that touch the visible pixels", () => {
  assert.deepEqual(visibleRange(0, 100, 20, 10, 512), [0, 8]);
  assert.deepEqual(visibleRange(1000, 100, 20, 10, 512), [98, 108]);
  assert.deepEqual(visibleRange(0, 10_000, 0, 10, 30), [0, 29]);
});

test("labels thin to a stride when rows are tight, and never collide", () => {
  const all = thinLabels(0, 31, 20, 18);
  assert.equal(all.length, 32);
  const thin = thinLabels(0, 511, 1, 18);
  assert.equal(thin[0], 0);
  assert.equal(thin[1], 18);
  for (let k = 1; k < thin.length; k++) assert.ok(thin[k] - thin[k - 1] >= 18);
});

test("the hovered or selected row always keeps its label, and its neighbours make way", () => {
  const labels = thinLabels(0, 511, 1, 18, [100, null]);
  assert.ok(labels.includes(100));
  for (const i of labels) assert.ok(i === 100 || Math.abs(i - 100) >= 18, `label ${i} collides with 100`);
  assert.ok(!thinLabels(0, 50, 1, 18, [300]).includes(300)); // off screen: not drawn
  const two = thinLabels(0, 511, 1, 18, [200, 205]);
  assert.ok(two.includes(200) && two.includes(205)); // both priorities, even when close together
});

test("long labels are shortened with an ellipsis, counting characters not code units", () => {
  assert.equal(truncate("short", 10), "short");
  assert.equal(truncate("extraordinarily", 6), "extra\u2026");
  assert.equal(truncate("😀😀😀😀", 3), "😀😀\u2026");
});

test("the weight floor keeps at most the budget of lines", () => {
  const values = Float32Array.from({ length: 10_000 }, (_, k) => (k % 100) / 100);
  const floor = weightFloor(values, 1000, 0.01);
  const kept = values.filter((v) => v >= floor).length;
  assert.ok(kept <= 1000 && kept >= 800, `kept ${kept} at floor ${floor}`);
  assert.equal(weightFloor(Float32Array.from([0.5, 0.2]), 10, 0.05), 0.05);
});

test("label type: the base size unless a host asks for more; then it grows with the rows, never past them", () => {
  assert.equal(labelType(40).px, 15); // rows 40 apart, no wish for larger type: as before
  assert.equal(labelType(22, 28).px, 19);
  assert.equal(labelType(22, 28).pitch, 22);
  assert.equal(labelType(60, 28).px, 28);
  assert.equal(labelType(8, 28).px, 15); // crowded rows keep the base size (and thin their labels)
  assert.match(labelType(22, 28).bold, /^bold 19px /);
});

test("rows a little short of a label's pitch keep every label in smaller type, so that all of them fit the box", () => {
  // A 16-token sentence (18 rows) in the app's first box at 1280 x 720: 322 px for the rows.
  assert.equal(pitchFor(18, 322, "labels"), 322 / 18); // 17.9 px rows: every one in the box
  assert.equal(labelType(322 / 18).px, 14);
  assert.equal(labelType(16).px, FIT_LABEL_PX);
  assert.equal(labelType(16).pitch, 16); // one label per row
  assert.equal(labelType(16, 28).px, FIT_LABEL_PX); // a host's wish for larger type does not outgrow the rows
  assert.equal(pitchFor(18, 18 * 15.9, "labels"), LABEL_PITCH); // smaller still: the base size, and the box scrolls
  assert.equal(labelType(15.9).px, 15);
});
