// The corpus maps as the views use them: the blobs of bertviz_app/views/corpus_payload.py decoded (decodeBlob of
// decode.mjs), their strings read on demand, and the categories a map is coloured by. Nothing here draws.

import { decodeBlob } from "./decode.mjs";

const NONE16 = 65535; // a uint16 index that stands for "none"
const COORD_MAX = 65535;
// Colours of categories, the commonest first (past the last: grey, "other"); a palette readable on white.
export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
  "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"];
export const OTHER = "#b8b8b8";
const NONE = new Set(["(none)", "(unknown)"]); // listed after every named category
export const KIND_COLORS = ["#1f77b4", "#e6550d"]; // queries, keys (AttentionViz's blue and orange)

/** The categorical colours of a palette (palette.mjs's, or the default's): { colors, other, kinds (query, key),
 * right, wrong }. */
export function categoryColors(palette) {
  return palette?.categories ?? { colors: PALETTE, other: OTHER, kinds: KIND_COLORS, right: "#2ca02c",
    wrong: "#d62728" };
}

/** A string table of a decoded blob: get(i) decodes string i once. */
export function stringTable(arrays, name) {
  const bytes = arrays[name], at = arrays[`${name}_at`];
  const decoder = new TextDecoder();
  const memo = new Map();
  return {
    size: at.length - 1,
    get(i) {
      if (!(i >= 0 && i < at.length - 1)) return "";
      if (!memo.has(i)) memo.set(i, decoder.decode(bytes.subarray(at[i], at[i + 1])));
      return memo.get(i);
    },
  };
}

function indexes(array) {
  if (!(array instanceof Uint16Array)) return Int32Array.from(array);
  return Int32Array.from(array, (v) => (v === NONE16 ? -1 : v));
}

/** Coordinates 0..1 across the map's bounds (y up). */
function unit(codes) {
  return Float32Array.from(codes, (v) => v / COORD_MAX);
}

/**
 * A corpus map from its blob (bytes, base64 or ArrayBuffer):
 *   kind "corpus_qk": points 2n (queries 0..n-1, then the keys of the same tokens), tokens n, and per token
 *     sentence (index into sentenceIds), position, piece, tag (-1 none); context(s) -> the pieces of sentence s
 *   kind "corpus_sentences": points n, label, prediction (or null), text(i)
 * Both: x, y (Float32Array, 0..1 of the bounds), header.
 */
export async function decodeCorpusMap(input) {
  const { header, arrays } = await decodeBlob(input);
  const base = { header, kind: header.kind, x: unit(arrays.x), y: unit(arrays.y), points: arrays.x.length };
  if (header.kind === "corpus_qk") {
    const pieces = stringTable(arrays, "pieces"), tags = stringTable(arrays, "tags");
    const at = arrays.context_at, context = indexes(arrays.context);
    return { ...base, tokens: header.tokens, sentence: arrays.sentence, position: arrays.position,
      piece: indexes(arrays.piece), tag: indexes(arrays.tag), sentenceIds: arrays.sentence_ids, pieces, tags,
      context: (s) => Array.from(context.subarray(at[s], at[s + 1]), (p) => pieces.get(p)) };
  }
  if (header.kind === "corpus_sentences") {
    const texts = stringTable(arrays, "texts"), labels = stringTable(arrays, "labels");
    return { ...base, sentenceIds: arrays.sentence_ids, label: indexes(arrays.label),
      prediction: arrays.prediction ? indexes(arrays.prediction) : null, labels, text: (i) => texts.get(i) };
  }
  throw new Error(`expected a corpus map, got ${header.kind}`);
}

/** The token a point of a query/key map stands for (points i and i + n are token i's query and key). */
export function tokenOf(map, point) {
  return point < map.tokens ? point : point - map.tokens;
}

/** Whether a point of a query/key map is a key. */
export function isKey(map, point) {
  return point >= map.tokens;
}

/** The token's sentence as words (pieces "##"-joined), the token's own word marked: { before, word, after }. */
export function tokenInSentence(map, token) {
  const pieces = map.context(map.sentence[token]);
  const at = map.position[token];
  const words = []; // [text, first piece, last piece]
  pieces.forEach((p, k) => {
    if (p.startsWith("##") && words.length) { const w = words[words.length - 1]; w[0] += p.slice(2); w[2] = k; }
    else words.push([p, k, k]);
  });
  const mine = words.findIndex(([, a, b]) => a <= at && at <= b);
  const join = (list) => list.map((w) => w[0]).join(" ");
  return { before: join(words.slice(0, mine)), word: mine >= 0 ? words[mine][0] : "", after:
    join(words.slice(mine + 1)) };
}

/** What a point of a map is called by a colouring ("kind", "position", "tag", "word", "label", "prediction",
 * "error"). */
export function categoryOf(map, point, by) {
  if (map.kind === "corpus_qk") {
    const t = tokenOf(map, point);
    if (by === "kind") return isKey(map, point) ? "key" : "query";
    if (by === "position") return map.position[t] >= 20 ? "20+" : String(map.position[t]);
    if (by === "tag") return map.tag[t] >= 0 ? map.tags.get(map.tag[t]) : "(none)";
    return map.pieces.get(map.piece[t]);
  }
  if (by === "error") {
    if (!map.prediction || map.prediction[point] < 0 || map.label[point] < 0) return "(unknown)";
    return map.prediction[point] === map.label[point] ? "right" : "wrong";
  }
  const codes = by === "prediction" && map.prediction ? map.prediction : map.label;
  return codes[point] >= 0 ? map.labels.get(codes[point]) : "(none)";
}

/**
 * The colouring of a map by a category: { by, names (commonest first, "other" last when some are grouped),
 * counts, colors (CSS), index: Uint16Array (point -> names' index) }. "kind" keeps query and key in their order,
 * "position" the positions in theirs; past the palette, the rarest go to "other".
 */
export function colorCategories(map, by, palette) {
  const cc = categoryColors(palette);
  const counts = new Map();
  const of = new Array(map.points);
  for (let i = 0; i < map.points; i++) {
    const name = categoryOf(map, i, by);
    of[i] = name;
    counts.set(name, (counts.get(name) || 0) + 1);
  }
  let names = [...counts.keys()];
  if (by === "kind") names = ["query", "key"].filter((n) => counts.has(n));
  else if (by === "position") names.sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  else names.sort((a, b) => NONE.has(a) - NONE.has(b) || counts.get(b) - counts.get(a) || (a < b ? -1 : 1));
  const ramp = by === "position";
  const room = ramp ? names.length : cc.colors.length;
  const shown = names.slice(0, names.length > room ? room - 1 : room);
  const grouped = shown.length < names.length;
  const place = new Map(shown.map((n, k) => [n, k]));
  const index = new Uint16Array(map.points);
  for (let i = 0; i < map.points; i++) index[i] = place.has(of[i]) ? place.get(of[i]) : shown.length;
  const colors = shown.map((n, k) => (by === "kind" ? cc.kinds[k] : ramp ? rampColor(k / Math.max(1,
    shown.length - 1)) : by === "error" ? (n === "wrong" ? cc.wrong : n === "right" ? cc.right : cc.other)
    : cc.colors[k]));
  const all = grouped ? [...shown, "other"] : shown;
  return { by, names: all, colors: grouped ? [...colors, cc.other] : colors, index,
    counts: all.map((n) => (n === "other" && grouped ? names.slice(shown.length).reduce((s, m) => s + counts.get(m),
      0) : counts.get(n))) };
}

/** A colour from dark blue (0) to yellow (1) through green, for ordered categories (positions). */
export function rampColor(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const s = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
  const k = Math.min(Math.floor(s), stops.length - 2), f = s - k;
  const c = stops[k].map((v, j) => Math.round(v + f * (stops[k + 1][j] - v)));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** A sentence as the Task tab's held-out table and a sentence map compare it: one space between words, none at
 * the ends, a pair after " | " as the map's texts write it (corpus/browser.py `same_text` does the same). */
export function sentenceKey(text, pair = "") {
  const clean = (t) => String(t ?? "").replace(/\s+/g, " ").trim();
  return clean(pair) ? `${clean(text)} | ${clean(pair)}` : clean(text);
}

const sentenceIndexes = new WeakMap();

/** A sentence map's points by sentence id and by sentenceKey (the first point of a text), built once per map:
 * { byId: Map, byText: Map }. */
export function sentenceIndex(map) {
  if (!sentenceIndexes.has(map)) {
    const byId = new Map(), byText = new Map();
    for (let i = 0; i < map.points; i++) {
      byId.set(Number(map.sentenceIds[i]), i);
      const key = sentenceKey(map.text(i));
      if (!byText.has(key)) byText.set(key, i);
    }
    sentenceIndexes.set(map, { byId, byText });
  }
  return sentenceIndexes.get(map);
}
