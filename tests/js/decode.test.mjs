import assert from "node:assert/strict";
import { test } from "node:test";

import { base64ToBytes, bytesToBase64, decodePayload, decodeQueryKey, readContainer, toBytes } from
  "../../bertviz_app/views/js/decode.mjs";
import { layerMatrix } from "../../bertviz_app/views/js/data.mjs";
import { close, expected, payloadBytes, queryKeyBytes } from "./helpers.mjs";

test("the payload written by Python decodes to its tokens, shapes and sections", async () => {
  const p = await decodePayload(payloadBytes());
  assert.deepEqual(p.tokens, expected.tokens); // "<b>" and "&amp;" stay the characters they are
  assert.equal(p.length, 9);
  assert.equal(p.layers, 2);
  assert.equal(p.heads, 3);
  assert.deepEqual(Array.from(p.segments), [0, 0, 0, 0, 0, 0, 1, 1, 1]);
  assert.deepEqual(Array.from(p.special), [1, 0, 0, 0, 0, 1, 0, 0, 1]);
  assert.deepEqual(Array.from(p.words), expected.words);
  assert.equal(p.model, "fixture-model");
  assert.equal(p.title, "a <b>fixture</b>");
  assert.deepEqual(Object.keys(p.sets).sort(), ["attention", "rollout"]);
  assert.equal(p.sets.attention.perHead, true);
  assert.equal(p.sets.rollout.perHead, false);
  assert.equal(p.sets.attention.codes.length, 2 * 3 * 9 * 9);
  close(p.statistics.entropy, expected.statistics.entropy.flat(), 1e-6, "entropy");
  assert.deepEqual(p.dominant, expected.dominant);
});

test("dequantized attention matches Python's and lies within one 8-bit step of the truth", async () => {
  const p = await decodePayload(payloadBytes());
  for (let l = 0; l < 2; l++) {
    for (let h = 0; h < 3; h++) {
      const m = layerMatrix(p.sets.attention, 9, 3, l, h);
      close(m, expected.dequantized[l][h].flat(), 1e-6, `layer ${l} head ${h} vs Python`);
      close(m, expected.attention[l][h].flat(), 1 / 255, `layer ${l} head ${h} vs float32`);
      for (let i = 0; i < 9; i++) {
        const sum = m.subarray(i * 9, i * 9 + 9).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum - 1) < 1e-5, `row ${i} sums to ${sum}`);
      }
    }
  }
  close(layerMatrix(p.sets.rollout, 9, 3, 1, 0), expected.rollout[1].flat(), 1 / 255, "rollout");
});

test("base64 input decodes the same as bytes, and base64 round-trips", async () => {
  const bytes = payloadBytes();
  const text = Buffer.from(bytes).toString("base64");
  assert.deepEqual(base64ToBytes(text), bytes);
  assert.equal(bytesToBase64(bytes), text);
  const p = await decodePayload(text);
  assert.deepEqual(p.tokens, expected.tokens);
  assert.deepEqual(toBytes(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), bytes);
});

test("the query/key blob decodes and is refused for another input", async () => {
  const p = await decodePayload(payloadBytes());
  const qk = await decodeQueryKey(queryKeyBytes(), p);
  assert.equal(qk.headSize, 4);
  assert.equal(qk.queries.length, 2 * 3 * 9 * 4);
  assert.equal(qk.queryScale.length, 6);
  await assert.rejects(decodeQueryKey(queryKeyBytes(), { ...p, key: "another-input" }), /another input/);
  await assert.rejects(decodeQueryKey(queryKeyBytes(), { ...p, length: 10 }), /another input/);
  await assert.rejects(decodePayload(queryKeyBytes()), /expected an attention payload/);
});

test("bytes that are not a payload, or of another version, say so", () => {
  const bytes = payloadBytes().slice();
  assert.throws(() => readContainer(new Uint8Array(4)), /too short/);
  const wrong = bytes.slice();
  wrong[0] = 0x58;
  assert.throws(() => readContainer(wrong), /wrong magic/);
  const newer = bytes.slice();
  newer[4] = 2;
  assert.throws(() => readContainer(newer), /version 2/);
  assert.throws(() => toBytes(42), /must be bytes/);
});

test("unknown sections and header keys are ignored, so later additions need no new version", async () => {
  const { header } = readContainer(payloadBytes());
  assert.ok(header.sections.every((s) => typeof s.offset === "number" && typeof s.length === "number"));
  assert.equal(header.format, "bertviz-views");
});
