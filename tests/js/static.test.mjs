// The static page's pure parts: the views' data it makes in the browser (compared with what the views' decoder
// reads from Python's payload for the same attention), its permalinks (the views' own module, as the app's), the
// pieces of its start and the truncation and word splitting of its tokenizer. Its tokenizer against ours on hard
// strings, and its numbers against PyTorch, run in Chromium (tests/test_static_browser.py): the browser's Unicode
// tables are what matter there.

import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload, decodeQueryKey } from "../../bertviz_app/views/js/decode.mjs";
import * as links from "../../bertviz_app/views/js/permalink.mjs";
import { attentionData, queryKeyData } from "../../bertviz_app/static/js/views-data.mjs";
import { queryKeyRow } from "../../bertviz_app/views/js/data.mjs";
import { fetchFile, isNextProbability, loadBytes, maskedInput, modelFeeds, openingSelection, pageLink,
  runningNote, termsFit, topPredictions, viewsDataOf } from "../../bertviz_app/static/js/page.mjs";
import { createTokenizer, readSettings, splitWords, truncateLongestFirst,
  wordPieces } from "../../bertviz_app/static/js/wordpiece.mjs";
import { close, expected, payloadBytes, termsQueryKeyBytes } from "./helpers.mjs";

const SEGMENTS = [0, 0, 0, 0, 0, 0, 1, 1, 1];
const SPECIAL = [1, 0, 0, 0, 0, 1, 0, 0, 1];
const INPUT = { tokens: expected.tokens, segments: SEGMENTS, special: SPECIAL,
  attention: Float32Array.from(expected.attention.flat(3)), rollout: Float32Array.from(expected.rollout.flat(2)),
  layers: expected.layers, heads: expected.heads, model: "m", title: "t", key: "k" };

test("the page's views data is what the views' decoder reads from Python's payload", async () => {
  const ours = attentionData(INPUT);
  const python = await decodePayload(payloadBytes());
  // the same fields as a decoded payload (its header aside: only the decoder reads it)
  assert.deepEqual(Object.keys(ours).sort(), Object.keys(python).filter((k) => k !== "header").sort());
  assert.deepEqual(ours.tokens, python.tokens);
  assert.deepEqual(Array.from(ours.words), Array.from(python.words));
  assert.deepEqual(Array.from(ours.segments), SEGMENTS);
  for (const name of ["attention", "rollout"]) {
    const { codes, ...rest } = ours.sets[name];
    const { codes: want, ...wantRest } = python.sets[name];
    assert.deepEqual(rest, wantRest, name);
    assert.deepEqual(Array.from(codes), Array.from(want), name);
  }
  assert.deepEqual(Object.keys(ours.statistics), Object.keys(python.statistics));
  for (const name of Object.keys(python.statistics)) {
    close(ours.statistics[name], python.statistics[name], 1e-5, name);
  }
  assert.deepEqual(ours.dominant, python.dominant);
  assert.equal(ours.key, "k");
});

test("the page's query/key data is within one int8 step, and the views take it as a decoded blob", async () => {
  const [L, H, T, d] = [2, 3, 4, 5];
  const q = Float32Array.from({ length: L * H * T * d }, (_, i) => Math.sin(i));
  const k = Float32Array.from({ length: L * H * T * d }, (_, i) => Math.cos(3 * i) * (i % 7));
  const data = queryKeyData(q, k, L, H, T, d, "key");
  assert.equal(data.headSize, d);
  for (const [codes, scale, truth] of [[data.queries, data.queryScale, q], [data.keys, data.keyScale, k]]) {
    const values = Array.from(codes, (c, i) => c * scale[Math.floor(i / (T * d))]);
    close(values, truth, Math.max(...scale) / 2 + 1e-7, "int8");
  }
  const payload = { layers: L, heads: H, length: T, key: "key" };
  assert.equal(await decodeQueryKey(data, payload), data); // as it is, checked against its payload
  await assert.rejects(decodeQueryKey(data, { ...payload, key: "other" }), /belong to another input/);
  assert.equal(data.terms, null); // no terms given: the view shows the model's attention row
  assert.equal(data.scoreScale, null);
});

test("the page's score terms are quantized as Python's blob: the same codes, scales and row arithmetic", async () => {
  // Python's blob of a model with three terms; its values (float32 codes x scales, as the graph would give them)
  // quantized again by the page must give back Python's codes, row by row in its (L, h, n, T, T) order.
  const python = await decodeQueryKey(termsQueryKeyBytes("terms"));
  const { layers: L, heads: H, length: T, headSize: d } = python;
  const n = python.terms.names.length;
  const values = (codes, scale, size) => Float32Array.from(codes, (c, i) => c * scale[Math.floor(i / size)]);
  const data = queryKeyData(values(python.queries, python.queryScale, T * d), values(python.keys, python.keyScale,
    T * d), L, H, T, d, python.header.key, { names: python.terms.names,
    values: values(python.terms.codes, python.terms.scale, T), scale: python.scoreScale });
  assert.deepEqual(data.terms.names, ["q.k", "c2p", "p2c"]);
  assert.equal(data.terms.scale.length, L * H * n * T);
  assert.deepEqual(Array.from(data.terms.codes), Array.from(python.terms.codes));
  close(data.terms.scale, python.terms.scale, 1e-7 * Math.max(...python.terms.scale), "row scales");
  assert.equal(data.scoreScale, python.scoreScale);
  const [layer, head, token] = expected.query_at;
  const row = queryKeyRow(data, layer, head, token);
  assert.deepEqual(row.terms.map((t) => t.name), expected.terms.names);
  close(row.scores, expected.terms.scores, 1e-5, "scores");
  close(row.weights, expected.terms.weights, 1e-6, "weights");
});

test("the page asks for score terms up to the server's cap, and the graph computes them only when asked", () => {
  const model = { layers: 6, heads: 12, scoreTerms: ["q.k"], scoreTermsMaxValues: 6 * 12 * 256 * 256 };
  assert.ok(termsFit(model, 256));
  assert.ok(!termsFit(model, 257));
  assert.ok(!termsFit({ ...model, scoreTerms: ["q.k", "c2p", "p2c"] }, 256)); // three terms: fewer tokens
  assert.ok(termsFit({ ...model, scoreTerms: ["q.k", "c2p", "p2c"] }, 147));
  assert.ok(!termsFit({ ...model, scoreTerms: [] }, 8)); // a graph without terms: the view says so
  class Tensor { constructor(type, data, dims) { Object.assign(this, { type, data, dims }); } }
  const enc = { ids: [2, 5, 3], segments: [0, 0, 0] };
  for (const [withTerms, flag] of [[false, 0], [true, 1]]) {
    const gate = modelFeeds(Tensor, enc, [0], withTerms).with_score_terms;
    assert.deepEqual([gate.type, Array.from(gate.data), gate.dims], ["bool", [flag], []]);
  }
  assert.deepEqual(Array.from(modelFeeds(Tensor, enc, [0]).with_score_terms.data), [0]); // an analysis: none
});

test("the page's views data of an analysis: the app's title and a key of tokens and segments", () => {
  const r = { ...INPUT, tokens: INPUT.tokens, length: INPUT.tokens.length };
  const data = viewsDataOf(r, "a".repeat(60), "b".repeat(60), "tiny");
  assert.equal(data.text, `${"a".repeat(60)} | ${"b".repeat(60)}`);
  assert.equal(data.title.length, 100);
  assert.ok(data.title.endsWith("\u2026"));
  assert.equal(data.model, "tiny");
  assert.equal(data.key, `${INPUT.tokens.join("\u0001")}#${SEGMENTS.join("")}`);
  assert.equal(viewsDataOf(r, "short", null, "tiny").title, "short");
});

test("the page's link is the views' permalink, with its own parameters kept", () => {
  const state = { layer: 2, head: 7, token: 3, view: "qk", zoom: "2" };
  const url = pageLink(links, "file:///site/index.html?threads=2&a=old&tab=lines#top", { a: "A b", b: null,
    model: "m" }, state);
  assert.ok(url.startsWith("file:///site/index.html?"));
  const read = links.readLink(new URL(url).search);
  assert.deepEqual(read.selection, { layer: 2, head: 7, token: 3, view: "qk" });
  assert.deepEqual([read.a, read.b, read.model], ["A b", null, "m"]);
  assert.equal(new URL(url).searchParams.get("threads"), "2");
  assert.equal(new URL(url).searchParams.get("tab"), "query_key");
  assert.deepEqual(openingSelection({ ...state, matrix: "rollout", head: undefined }),
    { layer: 2, token: 3, view: "qk" });
});

test("the page's fill-mask and next-sentence numbers", () => {
  const tk = createTokenizer({ vocab: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "."] });
  const tokenize = (t) => tk.encode(t, null, 512).tokens;
  assert.deepEqual(maskedInput("the [ mask ] cat [MASK].", tokenize),
    { text: "the [MASK] cat [MASK].", positions: [2, 4] });
  assert.throws(() => maskedInput("the cat", tokenize), /put \[MASK\]/);
  // the server's limit, said in the server's words (limits.MAX_MASKS, written into the manifest)
  assert.throws(() => maskedInput("[MASK] ".repeat(21), tokenize, 20), /21 masks is too many; use at most 20\./);
  assert.equal(maskedInput("[MASK] ".repeat(20), tokenize, 20).positions.length, 20);
  const top = topPredictions(Float32Array.from([0, Math.log(3), 0, 2, 1, 0]), 3, 2, (id) => `t${id}`);
  assert.deepEqual(top.map((row) => row.map((p) => p.token)), [["t1", "t0"], ["t0", "t1"]]);
  close(top[0].map((p) => p.probability), [0.6, 0.2], 1e-6, "softmax");
  close([isNextProbability([Math.log(3), 0])], [0.75], 1e-6, "P(IsNext)");
  class Tensor { constructor(type, data, dims) { Object.assign(this, { type, data, dims }); } }
  const feeds = modelFeeds(Tensor, { ids: [2, 5, 3], segments: [0, 0, 0] }, [1]);
  assert.deepEqual(feeds.input_ids.dims, [1, 3]);
  assert.deepEqual(Array.from(feeds.input_ids.data), [2n, 5n, 3n]);
  assert.deepEqual(feeds.mlm_positions.dims, [1]);
});

/** A host's answer: `bytes` in chunks of 3, or a status. */
function answering(bytes, status = 200) {
  const asked = [];
  const fetchFn = async (url) => {
    asked.push(url);
    let at = 0;
    const body = new ReadableStream({ pull(c) {
      if (at >= bytes.length) { c.close(); return; }
      c.enqueue(bytes.subarray(at, at + 3));
      at += 3;
    } });
    return new Response(status === 200 ? body : null, { status });
  };
  return { asked, fetchFn };
}

test("over http the page fetches a file, its version in the address, and counts its bytes as they come", async () => {
  const bytes = Uint8Array.from({ length: 10 }, (_, i) => i * 7);
  const spec = { path: "data/model.onnx", bytes: 10, version: "abc123", parts: 1 };
  const { asked, fetchFn } = answering(bytes);
  const counted = [];
  assert.deepEqual(Array.from(await fetchFile(spec, (n) => counted.push(n), fetchFn)), Array.from(bytes));
  assert.deepEqual(asked, ["data/model.onnx?v=abc123"]);
  assert.deepEqual(counted, [3, 3, 3, 1]);
  // a file of another size (an earlier export's) or a refusal is an error, not a model cut short
  await assert.rejects(fetchFile({ ...spec, bytes: 12 }, () => {}, answering(bytes).fetchFn),
    /data\/model.onnx: 10 bytes arrived, 12 expected/);
  await assert.rejects(fetchFile({ ...spec, bytes: 8 }, () => {}, answering(bytes).fetchFn), /more than 8 bytes/);
  await assert.rejects(fetchFile(spec, () => {}, answering(bytes, 404).fetchFn), /the host answered 404/);
});

test("the page reads the parts from file://, and after a failed fetch, with the progress counted once", async () => {
  const spec = { path: "data/model.onnx", bytes: 4, version: "v", parts: 1 };
  const calls = [];
  const load = (fetched) => ({
    fetchFile: async (s, onBytes) => {
      calls.push("fetch");
      onBytes(3);
      if (!fetched) throw new Error("404");
      return "binary";
    },
    loadParts: async (name, s, onBytes) => { calls.push(`parts ${name}`); onBytes(4); return "parts"; },
  });
  let total = 0;
  const count = (n) => { total += n; };
  assert.equal(await loadBytes("model", spec, "https:", count, load(true)), "binary");
  assert.deepEqual([calls.splice(0), total], [["fetch"], 3]);
  total = 0;
  assert.equal(await loadBytes("model", spec, "file:", count, load(true)), "parts");
  assert.deepEqual([calls.splice(0), total], [["parts model"], 4]);
  total = 0;
  const warn = console.warn;
  console.warn = () => {};
  try {
    assert.equal(await loadBytes("model", spec, "http:", count, load(false)), "parts");
  } finally {
    console.warn = warn;
  }
  assert.deepEqual([calls.splice(0), total], [["fetch", "parts model"], 4]);
});

test("the page says when its weights are int8, which move the numbers", () => {
  assert.ok(!runningNote("m", 60.7e6, 1).includes("int8"));
  assert.ok(!runningNote("m", 60.7e6, 1, "float16").includes("int8"));
  assert.match(runningNote("m", 38.1e6, 2, "int8"), /2 threads\)\. Its weights are int8: attention differs/);
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

test("WordPiece's parts: words with specials found first, pieces longest first, [UNK] past the longest word", () => {
  const opts = readSettings({ vocab: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "a"],
    maxInputCharsPerWord: 5 });
  assert.deepEqual(splitWords("Un-aff[MASK] a", opts), [{ text: "un", special: false },
    { text: "-", special: false }, { text: "aff", special: false }, { text: "[MASK]", special: true },
    { text: "a", special: false }]);
  assert.deepEqual(wordPieces("unaff", opts), ["un", "##aff"]);
  assert.deepEqual(wordPieces("unaffable", opts), ["[UNK]"]); // over 5 characters
  assert.deepEqual(wordPieces("ab", opts), ["[UNK]"]); // "a", then nothing covers "b"
});
