import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload } from "../../bertviz_app/views/js/decode.mjs";
import { buildAtlas, describeHead, describePicks, moveCursor, statsLines,
  targetHeads } from "../../bertviz_app/views/js/view-overview.mjs";
import { headStatistics } from "../../bertviz_app/views/js/data.mjs";
import { payloadBytes } from "./helpers.mjs";

globalThis.ImageData ??= class { // what the browser gives; enough for a pure function to fill
  constructor(width, height) {
    this.width = width;
    this.height = height;
    this.data = new Uint8ClampedArray(width * height * 4);
  }
};

test("the atlas has one tile per head, laid out heads across and layers down", async () => {
  const p = await decodePayload(payloadBytes());
  const { image, size } = buildAtlas(p, "sqrt");
  assert.equal(size, 9);
  assert.equal(image.width, 3 * 9);
  assert.equal(image.height, 2 * 9);
  // The [SEP] head (layer 1, head 0) is dark in its token-5 column and light elsewhere.
  const pixel = (x, y) => image.data[(y * image.width + x) * 4];
  assert.ok(pixel(5, 9 + 2) < 60 && pixel(1, 9 + 2) > 200);
});

test("a head's statistics read as sentences", async () => {
  const p = await decodePayload(payloadBytes());
  const stats = headStatistics(p, 1, 0);
  assert.equal(stats.dominant, "[SEP]");
  const lines = describeHead(stats, 1, 0, 9);
  assert.match(lines[0], /Layer 1, head 0 mostly attends to \[SEP\] \(\d+% of its attention\)/);
  assert.match(lines[1], /Entropy [\d.]+ nats: 0 would mean/);
  assert.match(lines[2], /\[CLS\] \d+%, \[SEP\] \d+%/);
  assert.match(describeHead(null, 0, 0, 9)[1], /no head statistics/);
});

test("a tile stands for its head, a layer label for the row, a head number for the column", () => {
  assert.deepEqual(targetHeads({ layer: 1, head: 2 }, 3, 4), [[1, 2]]);
  assert.deepEqual(targetHeads({ layer: 1, head: -1 }, 3, 4), [[1, 0], [1, 1], [1, 2], [1, 3]]);
  assert.deepEqual(targetHeads({ layer: -1, head: 2 }, 3, 4), [[0, 2], [1, 2], [2, 2]]);
});

test("the keyboard cursor moves by arrows, stays inside, and reaches the labels only when asked", () => {
  const at = { layer: 0, head: 0 };
  assert.deepEqual(moveCursor(at, "ArrowRight", 3, 4), { layer: 0, head: 1 });
  assert.deepEqual(moveCursor(at, "ArrowDown", 3, 4), { layer: 1, head: 0 });
  assert.deepEqual(moveCursor(at, "ArrowLeft", 3, 4), at);
  assert.deepEqual(moveCursor({ layer: 2, head: 3 }, "ArrowDown", 3, 4), { layer: 2, head: 3 });
  assert.deepEqual(moveCursor(at, "ArrowLeft", 3, 4, true), { layer: 0, head: -1 });
  assert.deepEqual(moveCursor(at, "ArrowUp", 3, 4, true), { layer: -1, head: 0 });
  assert.deepEqual(moveCursor({ layer: 0, head: -1 }, "ArrowUp", 3, 4, true), { layer: 0, head: -1 }); // no corner
  assert.equal(moveCursor(at, "Enter", 3, 4), null);
});

test("picks read as words", () => {
  assert.equal(describePicks([[0, 1], [0, 4], [2, 3]]), "layer 0: heads 1 and 4; layer 2: head 3");
  assert.equal(describePicks([[5, 0], [5, 1], [5, 2]]), "layer 5: heads 0, 1 and 2");
  assert.equal(describePicks([]), "");
});

test("the statistics line speaks of what is pointed at, else of the head selected, and of picking", async () => {
  const p = await decodePayload(payloadBytes());
  const state = { layer: 1, head: 0, silenced: [[1, 0]] };
  const none = { active: null, ui: {} };
  const selected = statsLines(p, state, none, false, true);
  assert.deepEqual(selected.slice(1), describeHead(headStatistics(p, 1, 0), 1, 0, p.length).slice(1));
  assert.match(selected[0], / Picked to silence\.$/);
  assert.doesNotMatch(statsLines(p, state, none, false, false)[0], /silence/); // no silence tools, no word of it
  assert.equal(statsLines(p, state, none, true, true)[0], "Picking heads to silence.");
  const row = statsLines(p, state, { active: { layer: 0, head: -1 }, ui: { picking: true } }, true, true);
  assert.deepEqual(row, [`Every head of layer 0 (${p.heads} heads).`,
    "Click or press Enter to pick all of them to silence."]);
  const other = statsLines(p, state, { active: { layer: 0, head: 2 }, ui: { picking: true } }, true, true);
  assert.match(other[0], / Click or press Enter to pick it to silence\.$/);
});
