import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload } from "../../bertviz_app/views/js/decode.mjs";
import { buildAtlas, describeHead } from "../../bertviz_app/views/js/view-overview.mjs";
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
