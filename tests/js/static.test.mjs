// The static page's pure parts: the payload it writes in the browser (read back by the views' own decoder and
// compared with what Python writes for the same attention), and the truncation rule of its tokenizer. Its
// tokenizer against ours on hard strings, and its numbers against PyTorch, run in Chromium
// (tests/test_static_browser.py): the browser's Unicode tables are what matter there.

import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload, decodeQueryKey } from "../../bertviz_app/views/js/decode.mjs";
import { encodePayload, encodeQueryKey } from "../../bertviz_app/static/js/payload.mjs";
import { createTokenizer, truncateLongestFirst } from "../../bertviz_app/static/js/wordpiece.mjs";
import { close, expected, payloadBytes } from "./helpers.mjs";

const SEGMENTS = [0, 0, 0, 0, 0, 0, 1, 1, 1];
const SPECIAL = [1, 0, 0, 0, 0, 1, 0, 0, 1];

test("the page's payload decodes to Python's attention and rollout codes, statistics and labels", async () => {
  const attention = Float32Array.from(expected.attention.flat(3));
  const { layers: L, heads: H } = expected;
  const ours = await decodePayload(encodePayload({ tokens: expected.tokens, segments: SEGMENTS, special: SPECIAL,
    attention, rollout: Float32Array.from(expected.rollout.flat(2)), layers: L, heads: H, model: "m", title: "t",
    key: "k" }));
  const python = await decodePayload(payloadBytes());
  assert.deepEqual(ours.tokens, python.tokens);
  assert.deepEqual(Array.from(ours.words), Array.from(python.words));
  assert.deepEqual(Array.from(ours.segments), SEGMENTS);
  assert.deepEqual(Array.from(ours.sets.attention.codes), Array.from(python.sets.attention.codes));
  assert.deepEqual(Array.from(ours.sets.rollout.codes), Array.from(python.sets.rollout.codes));
  for (const name of Object.keys(python.statistics)) {
    close(ours.statistics[name], python.statistics[name], 1e-5, name);
  }
  assert.deepEqual(ours.dominant, python.dominant);
  assert.equal(ours.key, "k");
});

test("the page's query/key blob decodes within one int8 step", async () => {
  const [L, H, T, d] = [2, 3, 4, 5];
  const q = Float32Array.from({ length: L * H * T * d }, (_, i) => Math.sin(i));
  const k = Float32Array.from({ length: L * H * T * d }, (_, i) => Math.cos(3 * i) * (i % 7));
  const blob = await decodeQueryKey(encodeQueryKey(q, k, L, H, T, d, "key"));
  assert.equal(blob.headSize, d);
  for (const [codes, scale, truth] of [[blob.queries, blob.queryScale, q], [blob.keys, blob.keyScale, k]]) {
    const values = Array.from(codes, (c, i) => c * scale[Math.floor(i / (T * d))]);
    close(values, truth, Math.max(...scale) / 2 + 1e-7, "int8");
  }
});

// The expected pairs are what tokenizer.truncate_longest_first returns for the same arguments.
test("truncation takes from the longer sentence first, as tokenizer.truncate_longest_first", () => {
  assert.deepEqual(truncateLongestFirst(10, 0, 4), [6, 0]);
  assert.deepEqual(truncateLongestFirst(10, 4, 8), [6, 0]);
  assert.deepEqual(truncateLongestFirst(10, 8, 10), [5, 3]);
  assert.deepEqual(truncateLongestFirst(8, 10, 11), [2, 5]); // the odd one from B
  assert.deepEqual(truncateLongestFirst(3, 2, 10), [0, 0]);
});

test("WordPiece: longest match first, ## continuations, [UNK] for a word it cannot cover, specials whole", () => {
  const tk = createTokenizer({ vocab: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able",
    "the", "cafe", ".", "!"] });
  assert.deepEqual(tk.tokenize("Unaffable THE café."), ["un", "##aff", "##able", "the", "cafe", "."]);
  assert.deepEqual(tk.tokenize("unknown the[MASK]!"), ["[UNK]", "the", "[MASK]", "!"]);
  const enc = tk.encode("the", "cafe!", 512);
  assert.deepEqual(enc.tokens, ["[CLS]", "the", "[SEP]", "cafe", "!", "[SEP]"]);
  assert.deepEqual(enc.segments, [0, 0, 0, 1, 1, 1]);
  assert.deepEqual(enc.special, [1, 0, 1, 0, 0, 1]);
  assert.throws(() => createTokenizer({ vocab: ["a"] }), /not a BERT vocabulary/);
});
