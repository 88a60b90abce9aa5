import assert from "node:assert/strict";
import { test } from "node:test";

import { ATTENTION_STOPS, formatNumber, formatShare, formatWeight, headColor, makeLUT, paintValues, parseHex,
  signedIndex, weightIndex, FLAGGED_COLOR } from "../../bertviz_app/views/js/scale.mjs";

test("a lookup table runs from the first stop to the last", () => {
  const lut = makeLUT(ATTENTION_STOPS, 256);
  assert.equal(lut.length, 1024);
  assert.deepEqual(Array.from(lut.subarray(0, 4)), [255, 255, 255, 255]);
  assert.deepEqual(Array.from(lut.subarray(1020, 1023)), parseHex("#08306b"));
  const mid = makeLUT(["#000000", "#ffffff"], 3);
  assert.deepEqual(Array.from(mid.subarray(4, 7)), [128, 128, 128]);
});

test("weights map to table indices linearly or by square root", () => {
  assert.equal(weightIndex(0, "linear"), 0);
  assert.equal(weightIndex(1, "linear"), 255);
  assert.equal(weightIndex(0.25, "linear"), 64);
  assert.equal(weightIndex(0.25, "sqrt"), 128);
  assert.equal(weightIndex(2, "sqrt"), 255);
  assert.equal(weightIndex(NaN, "linear"), 0);
  assert.equal(signedIndex(0, 3), 128);
  assert.equal(signedIndex(-3, 3), 0);
  assert.equal(signedIndex(9, 3), 255);
  assert.equal(signedIndex(1, 0), 128);
});

test("painting values gives flagged (NaN) cells their own color", () => {
  const lut = makeLUT(ATTENTION_STOPS);
  const pixels = paintValues(new Uint8ClampedArray(8), Float32Array.from([1, NaN]), lut, "linear");
  assert.deepEqual(Array.from(pixels.subarray(0, 3)), parseHex("#08306b"));
  assert.deepEqual(Array.from(pixels.subarray(4, 7)), parseHex(FLAGGED_COLOR));
  assert.equal(pixels[7], 255);
});

test("numbers are written for people", () => {
  assert.equal(formatWeight(0.234), "0.23");
  assert.equal(formatWeight(0.001), "<0.01");
  assert.equal(formatWeight(0), "0.00");
  assert.equal(formatWeight(NaN), "n/a");
  assert.equal(formatShare(0.416), "42%");
  assert.equal(formatNumber(-1.5), "\u22121.50");
  assert.notEqual(headColor(0), headColor(1));
  assert.match(headColor(20), /^hsl\(/);
});
