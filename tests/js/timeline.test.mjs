// The timeline slider's pure parts (timeline.mjs): what a snapshot says in words, the picture of roles over steps
// (where its cells go, what a click hits, what it paints), where the slider goes while playing or when a training
// adds snapshots, and which pages of payloads are held and asked for.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CLEAR_ROLES, ROLE_COLORS, indexAfterGrowing, inputText, nextIndex, pageStore, paintRoles, percent,
  predictionLines, roleCounts, rolesHit, rolesLayout, stepText } from "../../bertviz_app/views/js/timeline.mjs";

const roles = (...rows) => rows; // (L, h) labels
const SNAPSHOTS = [
  { step: 0, loss: null, loss_mean: null, roles: roles(["mixed", "broad"], ["broad", "broad"]) },
  { step: 10, loss: 7.5, loss_mean: 7.25, roles: roles(["previous token", "broad"], ["[SEP]", "broad"]) },
  { step: 40, loss: 5.0, loss_mean: 5.125, roles: roles(["previous token", "next token"], ["[SEP]", "self"]) },
];

test("a snapshot's step and loss: the mean since the previous snapshot, or 'before training'", () => {
  assert.equal(stepText(SNAPSHOTS[0], 40), "step 0 of 40 \u00b7 before training");
  assert.equal(stepText(SNAPSHOTS[1], 40), "step 10 of 40 \u00b7 loss 7.250");
  assert.equal(stepText({ step: 3, loss: 2, loss_mean: null }), "step 3 \u00b7 loss 2.000");
});

test("probabilities in words keep a significant digit when small", () => {
  assert.equal(percent(0.1234), "12%");
  assert.equal(percent(0.0512), "5.1%");
  assert.equal(percent(0.00042), "0.04%");
  assert.equal(percent(null), "?");
});

test("predictions: each [MASK]'s top five with the watched word, P(IsNext), a classifier's labels", () => {
  const item = { masks: [{ position: 6, top: [["the", 0.2], ["a", 0.1], ["paris", 0.05], [".", 0.01], [",", 0.01]],
    answer: 0.05 }] };
  assert.deepEqual(predictionLines(item, { answers: ["paris"] }),
    ["[MASK] \u2192 the 20%, a 10%, paris 5%, . 1%, , 1%"]);
  // the watched word outside the top five: its probability after them
  item.masks[0].top[2] = ["london", 0.05];
  assert.match(predictionLines(item, { answers: ["paris"] })[0], /\(paris: 5%\)$/);
  assert.deepEqual(predictionLines({ is_next: 0.834 }), ["P(B follows A) 83%"]);
  assert.deepEqual(predictionLines({ prediction: { label: "positive", probability: 0.9,
    probabilities: { negative: 0.1, positive: 0.9 } } }, { gold: "positive" }),
  ["predicts positive 90%, negative 10% (gold: positive)"]);
  assert.deepEqual(predictionLines({}), []);
});

test("role counts: heads with a clear role are those over half on one place", () => {
  const { counts, clear, heads } = roleCounts(SNAPSHOTS[2].roles);
  assert.equal(heads, 4);
  assert.equal(clear, 4);
  assert.equal(counts["previous token"], 1);
  assert.equal(roleCounts(SNAPSHOTS[0].roles).clear, 0);
  assert.ok(!CLEAR_ROLES.includes("broad") && !CLEAR_ROLES.includes("mixed"));
});

test("the picture of roles: a column per snapshot, a row per head, and a click finds both", () => {
  const layout = rolesLayout(SNAPSHOTS, { width: 18 + 3 * 20, maxHeight: 40 });
  assert.equal(layout.S, 3);
  assert.equal(layout.rows, 4);
  assert.equal(layout.cellW, 20);
  assert.equal(layout.cellH, 10);
  assert.equal(layout.colors[1][0], ROLE_COLORS["previous token"]); // snapshot 1, layer 0 head 0
  assert.equal(layout.colors[2][3], ROLE_COLORS.self); // layer 1 head 1
  assert.deepEqual(rolesHit(layout, 18 + 45, 25), { index: 2, layer: 1, head: 0 });
  assert.equal(rolesHit(layout, 5, 5), null); // the layer numbers
  assert.equal(rolesHit(layout, 18 + 60, 5), null);
  // many heads: rows stay at least 2 px tall
  const many = rolesLayout([{ roles: Array.from({ length: 12 }, () => Array(12).fill("broad")) }], { maxHeight: 150 });
  assert.equal(many.cellH, 2);
});

test("the picture paints every cell in its role's color and frames the snapshot on screen", () => {
  const layout = rolesLayout(SNAPSHOTS, { width: 78, maxHeight: 40 });
  const calls = [];
  const ctx = { clearRect() {}, fillText() {}, fillRect: (x, y, w, h) => calls.push(["fill", ctx.fillStyle, x, y]),
    strokeRect: (x, y, w, h) => calls.push(["frame", x, y, w, h]) };
  paintRoles(ctx, layout, { index: 1, layer: 0, head: 1 });
  const fills = calls.filter((c) => c[0] === "fill");
  assert.equal(fills.length, 12);
  assert.deepEqual(fills.find((c) => c[2] === 38 && c[3] === 0), ["fill", ROLE_COLORS["previous token"], 38, 0]);
  const frames = calls.filter((c) => c[0] === "frame");
  assert.equal(frames.length, 2); // the head's row, the snapshot's column
  assert.equal(frames[0][2], 10.5); // layer 0 head 1: the second row
  assert.equal(frames[1][1], 18 + 20 + 1); // snapshot 1
});

test("playing stops at the last snapshot; a growing timeline keeps its step, or follows the newest", () => {
  assert.equal(nextIndex(0, 3), 1);
  assert.equal(nextIndex(2, 3), null);
  assert.equal(indexAfterGrowing([0, 10, 40], 2, [0, 10, 40, 80]), 3); // on the last: follows the training
  assert.equal(indexAfterGrowing([0, 10, 40], 1, [0, 10, 40, 80]), 1); // elsewhere: stays on step 10
  assert.equal(indexAfterGrowing([0, 10, 40], 1, [0, 5, 10, 40]), 2);
  assert.equal(indexAfterGrowing([], -1, [0]), 0);
  assert.equal(indexAfterGrowing([0], 0, []), -1);
});

test("the input in one line", () => {
  assert.equal(inputText({ text: "a b", text_pair: "c" }), "a b | c");
  assert.equal(inputText({ text: "a b", text_pair: null }), "a b");
});

test("payloads come a page at a time: none asked within the pages held, one ask per page, three kept", async () => {
  const steps = [0, 1, 2, 5, 10, 20, 50, 100, 200, 400]; // pages of 3: [0 1 2] [5 10 20] [50 100 200] [400]
  const page = (n) => ({ page: n, steps: steps.slice(n * 3, n * 3 + 3), payloads: steps.slice(n * 3, n * 3 + 3)
    .map((s) => `payload ${s}`) });
  const asked = [];
  const evicted = [];
  const store = pageStore(page(3), 3, async (n) => { asked.push(n); return page(n); },
    { onEvict: (gone) => evicted.push(gone) });
  assert.equal(await store.payload(steps, 9), "payload 400");
  assert.deepEqual(asked, []); // the window the value brought
  assert.equal(store.has(steps, 8), false);
  const [a, b] = await Promise.all([store.payload(steps, 8), store.payload(steps, 7)]);
  assert.deepEqual([a, b, asked], ["payload 200", "payload 100", [2]]); // one ask for two snapshots of a page
  assert.equal(await store.payload(steps, 6), "payload 50");
  assert.deepEqual(asked, [2]);
  await store.payload(steps, 3);
  await store.payload(steps, 9); // page 3 used again: page 2 is now the least recently used
  await store.payload(steps, 0);
  assert.deepEqual(asked, [2, 1, 0]);
  assert.deepEqual(evicted, [steps.slice(6, 9)]);
  assert.equal(store.has(steps, 9) && store.has(steps, 3) && store.has(steps, 0), true);
  // a grown timeline: its last page has a step the page held does not, so it is asked for again
  const grown = [...steps, 800];
  store.add({ page: 3, steps: [400, 800], payloads: ["payload 400", "payload 800"] });
  assert.equal(await store.payload(grown, 10), "payload 800");
  assert.deepEqual(asked, [2, 1, 0]);
  await assert.rejects(pageStore(null, 3, null).payload(steps, 0), /not in this page/);
});
