import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload, decodeQueryKey } from "../../bertviz_app/views/js/decode.mjs";
import { blockAxes, blockMax, createCache, joinPieces, layerMatrix, makeBlock, makeUnits, mergeUnits,
  MIN_RENORMALIZE_MASS, poolMax, queryKeyRow, shownBlocks, softmax } from "../../bertviz_app/views/js/data.mjs";
import { defaultState } from "../../bertviz_app/views/js/selection.mjs";
import { close, expected, payloadBytes, queryKeyBytes } from "./helpers.mjs";

test("floor codes of a peaked row dequantize near zero, not to mid-step", () => {
  // One cell holds nearly everything; 99 cells share 0.003. Mid-step would give each 0.002 (0.2 in all).
  const T = 100;
  const codes = new Uint8Array(T * T);
  for (let i = 0; i < T; i++) codes[i * T] = 254; // floor(0.997 * 255)
  const m = layerMatrix({ perHead: false, rowsSumToOne: true, codes, max: 1 }, T, 1, 0, 0);
  assert.ok(m[1] < 0.0001, `a near-zero cell came back as ${m[1]}`);
  close([m.subarray(0, T).reduce((a, b) => a + b, 0)], [1], 1e-5);
});

test("the mean over heads is the mean of the heads", async () => {
  const p = await decodePayload(payloadBytes());
  const mean = layerMatrix(p.sets.attention, 9, 3, 0, "all");
  const heads = [0, 1, 2].map((h) => layerMatrix(p.sets.attention, 9, 3, 0, h));
  close(mean, mean.map((_, k) => (heads[0][k] + heads[1][k] + heads[2][k]) / 3), 1e-6);
});

test("words join WordPiece pieces and specials keep their own unit", async () => {
  const p = await decodePayload(payloadBytes());
  const units = makeUnits(p, "words");
  assert.deepEqual(units.labels, ["[CLS]", "unbelievable", "<b>", "[SEP]", "it", "&amp;", "[SEP]"]);
  assert.deepEqual(Array.from(units.first), [0, 1, 4, 5, 6, 7, 8]);
  assert.deepEqual(Array.from(units.tokenUnit), [0, 1, 1, 1, 2, 3, 4, 5, 6]);
  assert.deepEqual(Array.from(units.segments), [0, 0, 0, 0, 1, 1, 1]);
  const tokens = makeUnits(p, "tokens");
  assert.equal(tokens.count, 9);
  assert.equal(joinPieces(["play", "##ing", "##s"]), "playings");
});

test("a word of BPE or unigram pieces drops its lone leading space and the bare '##' of a split character", () => {
  assert.equal(joinPieces(["\u2423", "d", "##ogs"]), "dogs");
  assert.equal(joinPieces(["caf", "##\u00e9", "##"]), "caf\u00e9");
  assert.equal(joinPieces(["\u2423"]), "\u2423"); // a word that is only a space keeps its mark
});

test("word attention: summed over the attended pieces, averaged over the attending ones (as Python)", async () => {
  const p = await decodePayload(payloadBytes());
  const [layer, head] = expected.merge_at;
  const units = makeUnits(p, "words");
  const merged = mergeUnits(layerMatrix(p.sets.attention, 9, 3, layer, head), 9, units);
  close(merged, expected.merged.flat(), 1e-6);
  for (let u = 0; u < units.count; u++) {
    const sum = merged.subarray(u * units.count, (u + 1) * units.count).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-5, `word row ${u} sums to ${sum}`);
  }
  const same = layerMatrix(p.sets.attention, 9, 3, 0, 0);
  assert.equal(mergeUnits(same, 9, makeUnits(p, "tokens")), same); // tokens: nothing to merge
});

test("segment filters and hidden specials pick the block's axes", async () => {
  const p = await decodePayload(payloadBytes());
  const units = makeUnits(p, "tokens");
  assert.deepEqual(Array.from(blockAxes(units, "all", false).rows), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  const ab = blockAxes(units, "A->B", true);
  assert.deepEqual(Array.from(ab.rows), [1, 2, 3, 4]);
  assert.deepEqual(Array.from(ab.cols), [6, 7]);
  assert.deepEqual(Array.from(blockAxes(units, "B->B", false).cols), [6, 7, 8]);
  assert.throws(() => blockAxes(units, "A->C", false), /unknown segment filter/);
});

test("renormalized rows sum to one; rows with too little mass are flagged and hold no numbers", () => {
  // 3 x 3: row 0 keeps 0.5 on the shown columns, row 1 keeps 0.02, row 2 keeps 0.9.
  const m = Float32Array.from([0.5, 0.25, 0.25, 0.98, 0.01, 0.01, 0.1, 0.45, 0.45]);
  const axes = { rows: Int32Array.from([0, 1, 2]), cols: Int32Array.from([1, 2]) };
  const raw = makeBlock(m, 3, axes, false);
  close(raw.values, [0.25, 0.25, 0.01, 0.01, 0.45, 0.45], 1e-7);
  assert.equal(raw.flaggedCount, 0);
  const b = makeBlock(m, 3, axes, true);
  close(b.mass, [0.5, 0.02, 0.9], 1e-6);
  assert.ok(0.02 < MIN_RENORMALIZE_MASS);
  assert.deepEqual(Array.from(b.flagged), [0, 1, 0]);
  assert.equal(b.flaggedCount, 1);
  close(b.values.subarray(0, 2), [0.5, 0.5], 1e-6);
  assert.ok(Number.isNaN(b.values[2]) && Number.isNaN(b.values[3]));
  close(b.values.subarray(4), [0.5, 0.5], 1e-6);
  assert.equal(blockMax(b.values), 0.5);
});

test("the fixture's [SEP] head leaves too little to renormalize once [SEP] is hidden", async () => {
  const p = await decodePayload(payloadBytes());
  const state = { ...defaultState(p), layer: 1, head: 0, hideSpecial: true, renormalize: true };
  const { blocks, axes } = shownBlocks(p, state, createCache(), false);
  assert.deepEqual(Array.from(axes.rows), [1, 2, 3, 4, 6, 7]);
  assert.equal(blocks[0].flaggedCount, 6);
  const all = shownBlocks(p, { ...state, head: "all" }, createCache(), true);
  assert.equal(all.blocks.length, 3); // split: one block per head for the lines view
  assert.deepEqual(all.blocks.map((b) => b.head), [0, 1, 2]);
});

test("query/key arithmetic rebuilds the attention row", async () => {
  const p = await decodePayload(payloadBytes());
  const qk = await decodeQueryKey(queryKeyBytes(), p);
  const [layer, head, token] = expected.query_at;
  const row = queryKeyRow(qk, layer, head, token);
  assert.equal(row.d, 4);
  assert.equal(row.scale, 0.5);
  assert.deepEqual(row.terms.map((t) => t.name), ["q.k"]); // the model's one term is the score
  close(row.terms[0].values, row.scores, 0);
  close(row.scores, expected.scores, 1e-5, "scores");
  close(row.weights, expected.weights, 1e-6, "weights");
  close(row.weights, expected.exact_weights, 0.02, "weights vs float32"); // int8 terms: close, not equal
  // the q.k term is q.k times the model's scale, within the 8-bit steps of the vectors and the term
  close(Array.from(row.dots).map((x) => x * row.scale), row.scores, 0.05);
  let dot = 0;
  for (let e = 0; e < 4; e++) dot += row.products[2 * 4 + e];
  close([dot], [row.dots[2]], 1e-6);
});

test("softmax is stable for large scores and sums to one", () => {
  const w = softmax(Float32Array.from([1000, 1000, 999]));
  close([w.reduce((a, b) => a + b, 0)], [1], 1e-6);
  assert.ok(w[0] > w[2] && !w.some(Number.isNaN));
});

test("max-pooling keeps a one-pixel diagonal that averaging would fade", () => {
  const T = 8;
  const codes = new Uint8Array(T * T);
  for (let i = 0; i < T; i++) codes[i * T + i] = 200;
  const pooled = poolMax(codes, 0, T, 4);
  assert.deepEqual(Array.from(pooled), [200, 0, 0, 0, 0, 200, 0, 0, 0, 0, 200, 0, 0, 0, 0, 200]);
});

test("the cache keeps the most recent entries", () => {
  const cache = createCache(2);
  let made = 0;
  const get = (k) => cache.get(k, () => { made++; return k; });
  get("a"); get("b"); get("a"); get("c"); get("a"); get("b");
  assert.equal(made, 4); // "b" was evicted by "c", "a" stayed because it was used
});
