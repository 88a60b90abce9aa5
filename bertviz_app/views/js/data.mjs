// Numbers the views draw, as pure functions of a decoded payload: one head's matrix, words instead of pieces,
// segment blocks with hidden [CLS]/[SEP] and renormalized rows, the query/key arithmetic of one row, pooled tiles.
// Matrices are flat Float32Arrays, row-major: m[i * n + j] = how much unit i attends to unit j.

// Below this share of a row left on the shown columns, renormalizing would blow 8-bit rounding (up to 1/255 per
// cell) up into shares that look real: such rows are marked, not drawn.
export const MIN_RENORMALIZE_MASS = 0.05;
export const SEGMENT_FILTERS = ["all", "A->A", "A->B", "B->A", "B->B"];

/**
 * Values of one layer (and head) of a matrix set, dequantized. Floor codes say v is in [c, c + 1) * step; when
 * rows sum to one, the mass floor cut off a row (1 - sum of c * step) is shared equally by its cells, so rows sum
 * to one again and the near-zero cells of a peaked row stay near zero (the midpoint would give each of 512 such
 * cells 0.002, together a whole row's worth). head "all": the mean over the layer's heads.
 */
export function layerMatrix(set, T, heads, layer, head) {
  const out = new Float32Array(T * T);
  if (!set.perHead) return addDequantized(out, set, T, layer * T * T, 1);
  if (head !== "all") return addDequantized(out, set, T, (layer * heads + head) * T * T, 1);
  for (let h = 0; h < heads; h++) addDequantized(out, set, T, (layer * heads + h) * T * T, 1 / heads);
  return out;
}

function addDequantized(out, set, T, offset, weight) {
  const step = set.max / 255;
  const codes = set.codes;
  for (let i = 0; i < T; i++) {
    const row = offset + i * T;
    let sum = 0;
    for (let j = 0; j < T; j++) sum += codes[row + j];
    const share = set.rowsSumToOne ? Math.min(Math.max(1 - sum * step, 0), T * step) / T : step / 2;
    for (let j = 0; j < T; j++) out[i * T + j] += weight * (codes[row + j] * step + share);
  }
  return out;
}

const VISIBLE_SPACE = "\u2423"; // a piece that is only a space (SentencePiece's lone '\u2581'), as the payload writes it

/** A word's label: its pieces joined, with '##' continuation marks and a leading lone space piece dropped. */
export function joinPieces(pieces) {
  const shown = pieces.length > 1 && pieces[0] === VISIBLE_SPACE ? pieces.slice(1) : pieces;
  return shown.map((p, k) => (k > 0 && p.startsWith("##") ? p.slice(2) : p)).join("");
}

/**
 * The units a view shows: tokens, or words (pieces sharing a word id). For each unit: label, segment, special,
 * first and last token; tokenUnit maps a token to its unit.
 */
export function makeUnits(payload, mode) {
  const T = payload.length;
  const starts = [];
  for (let t = 0; t < T; t++) {
    if (mode !== "words" || t === 0 || payload.words[t] !== payload.words[t - 1]) starts.push(t);
  }
  const n = starts.length;
  const units = { mode, count: n, labels: [], segments: new Uint8Array(n), special: new Uint8Array(n),
    first: new Int32Array(n), last: new Int32Array(n), tokenUnit: new Int32Array(T) };
  starts.forEach((start, u) => {
    const end = u + 1 < n ? starts[u + 1] - 1 : T - 1;
    units.first[u] = start;
    units.last[u] = end;
    units.labels.push(joinPieces(payload.tokens.slice(start, end + 1)));
    units.segments[u] = payload.segments[start];
    units.special[u] = payload.special[start];
    for (let t = start; t <= end; t++) units.tokenUnit[t] = u;
  });
  return units;
}

/**
 * Token matrix (T x T) to word matrix (n x n) as Clark et al. (2019): attention TO a word is the sum over its
 * pieces, attention FROM a word the mean over its pieces, so rows still sum to one.
 */
export function mergeUnits(matrix, T, units) {
  const n = units.count;
  if (n === T) return matrix;
  const cols = new Float32Array(T * n); // (T, n): summed over the attended word's pieces
  for (let i = 0; i < T; i++) {
    for (let j = 0; j < T; j++) cols[i * n + units.tokenUnit[j]] += matrix[i * T + j];
  }
  const out = new Float32Array(n * n);
  for (let u = 0; u < n; u++) {
    const pieces = units.last[u] - units.first[u] + 1;
    for (let i = units.first[u]; i <= units.last[u]; i++) {
      for (let v = 0; v < n; v++) out[u * n + v] += cols[i * n + v] / pieces;
    }
  }
  return out;
}

/** Unit indices kept on each axis by a segment filter ('A->B': rows of A, columns of B) and hidden specials. */
export function blockAxes(units, segments, hideSpecial) {
  if (!SEGMENT_FILTERS.includes(segments)) throw new Error(`unknown segment filter ${segments}`);
  const [from, to] = segments === "all" ? [null, null] : segments.split("->").map((s) => (s === "A" ? 0 : 1));
  const pick = (seg) => {
    const out = [];
    for (let u = 0; u < units.count; u++) {
      if (hideSpecial && units.special[u]) continue;
      if (seg !== null && units.segments[u] !== seg) continue;
      out.push(u);
    }
    return Int32Array.from(out);
  };
  return { rows: pick(from), cols: pick(to) };
}

/**
 * The shown block of an n x n matrix: values (rows x cols), each row's mass on the shown columns, and, when
 * renormalizing, flagged rows (mass under MIN_RENORMALIZE_MASS) whose values are NaN: draw them as "not enough
 * attention left", never as numbers.
 */
export function makeBlock(matrix, n, axes, renormalize) {
  const { rows, cols } = axes;
  const whole = rows.length === n && cols.length === n; // nothing hidden: share the matrix instead of copying it
  const values = whole ? matrix : new Float32Array(rows.length * cols.length);
  const mass = new Float32Array(rows.length);
  const flagged = new Uint8Array(rows.length);
  let flaggedCount = 0;
  for (let r = 0; r < rows.length; r++) {
    const base = rows[r] * n;
    let sum = 0;
    for (let c = 0; c < cols.length; c++) {
      const v = matrix[base + cols[c]];
      if (!whole) values[r * cols.length + c] = v;
      sum += v;
    }
    mass[r] = sum;
    if (!renormalize) continue;
    if (whole) continue; // rows already sum to one: nothing to renormalize
    if (sum < MIN_RENORMALIZE_MASS) {
      flagged[r] = 1;
      flaggedCount++;
      values.fill(NaN, r * cols.length, (r + 1) * cols.length);
    } else {
      for (let c = 0; c < cols.length; c++) values[r * cols.length + c] /= sum;
    }
  }
  return { rows, cols, values, mass, flagged, flaggedCount, renormalized: renormalize };
}

/** Largest value of a block, ignoring NaN (flagged rows). */
export function blockMax(values) {
  let max = 0;
  for (let k = 0; k < values.length; k++) if (values[k] > max) max = values[k];
  return max;
}

/**
 * The arithmetic of one attention row from the query/key blob: q (d), keys (T x d), products q * k_j (T x d),
 * dots q . k_j (T), and, when the blob carries the model's score terms, each term of the row (terms: [{ name,
 * values (T) }], already scaled), scores (T, their sum) and weights (T, its softmax). Nothing here knows how a
 * family scores: the terms are the model's, added up as they come. Without terms, scores and weights are null.
 */
export function queryKeyRow(qk, layer, head, token) {
  const { length: T, headSize: d } = qk;
  const lh = layer * qk.heads + head;
  const qs = qk.queryScale[lh];
  const ks = qk.keyScale[lh];
  const q = new Float32Array(d);
  for (let e = 0; e < d; e++) q[e] = qk.queries[(lh * T + token) * d + e] * qs;
  const keys = new Float32Array(T * d);
  for (let k = 0; k < T * d; k++) keys[k] = qk.keys[lh * T * d + k] * ks;
  const products = new Float32Array(T * d);
  const dots = new Float32Array(T);
  for (let j = 0; j < T; j++) {
    let dot = 0;
    for (let e = 0; e < d; e++) {
      const p = q[e] * keys[j * d + e];
      products[j * d + e] = p;
      dot += p;
    }
    dots[j] = dot;
  }
  const row = { layer, head, token, d, q, keys, products, dots, scale: qk.scoreScale, terms: null, scores: null,
    weights: null };
  if (!qk.terms) return row;
  const n = qk.terms.names.length;
  row.terms = qk.terms.names.map((name, t) => {
    const r = (lh * n + t) * T + token; // (L, H, n, T) rows, each of T keys
    const scale = qk.terms.scale[r];
    const values = new Float32Array(T);
    for (let j = 0; j < T; j++) values[j] = qk.terms.codes[r * T + j] * scale;
    return { name, values };
  });
  row.scores = new Float32Array(T);
  for (const term of row.terms) for (let j = 0; j < T; j++) row.scores[j] += term.values[j];
  row.weights = softmax(row.scores);
  return row;
}

export function softmax(xs) {
  let max = -Infinity;
  for (const x of xs) if (x > max) max = x;
  const out = new Float32Array(xs.length);
  let sum = 0;
  for (let k = 0; k < xs.length; k++) { out[k] = Math.exp(xs[k] - max); sum += out[k]; }
  for (let k = 0; k < xs.length; k++) out[k] /= sum;
  return out;
}

/**
 * One head's codes shrunk to size x size by taking the largest code of each block: a thumbnail keeps a sharp
 * diagonal (a previous-token head) that averaging would wash out. Returns Uint8Array(size * size).
 */
export function poolMax(codes, offset, T, size) {
  const out = new Uint8Array(size * size);
  const bucket = new Int32Array(T);
  for (let j = 0; j < T; j++) bucket[j] = Math.floor((j * size) / T);
  for (let i = 0; i < T; i++) {
    const r = bucket[i] * size;
    const row = offset + i * T;
    for (let j = 0; j < T; j++) {
      const k = r + bucket[j];
      const c = codes[row + j];
      if (c > out[k]) out[k] = c;
    }
  }
  return out;
}

/** Statistics of one head as an object (null when the payload carries none). */
export function headStatistics(payload, layer, head) {
  if (!payload.statistics) return null;
  const k = layer * payload.heads + head;
  const out = {};
  for (const [name, values] of Object.entries(payload.statistics)) out[name] = values[k];
  out.dominant = payload.dominant ? payload.dominant[layer][head] : null;
  return out;
}

/** A small least-recently-used map: recomputing a 512 x 512 head costs milliseconds, keeping all 72 megabytes. */
export function createCache(limit = 32) {
  const map = new Map();
  return {
    get(key, make) {
      if (map.has(key)) {
        const value = map.get(key);
        map.delete(key);
        map.set(key, value);
        return value;
      }
      const value = make();
      map.set(key, value);
      if (map.size > limit) map.delete(map.keys().next().value);
      return value;
    },
  };
}

/**
 * What the lines and matrix views show for a selection state: the units, the axes kept by the filters, and the
 * blocks; one per head when split is true and all heads are selected (the lines view colors each head), else
 * one (the mean over heads, or the one head, or a per-layer set such as rollout). Each block has its head
 * (null for the mean or a per-layer set).
 */
export function shownBlocks(payload, state, cache, split) {
  const set = payload.sets[state.matrix];
  const units = cache.get(`units|${state.units}`, () => makeUnits(payload, state.units));
  const T = payload.length;
  let heads;
  if (!set.perHead) heads = [null];
  else if (state.head !== "all") heads = [state.head];
  else heads = split ? Array.from({ length: payload.heads }, (_, h) => h) : ["all"];
  const axes = cache.get(`axes|${state.units}|${state.segments}|${state.hideSpecial}`,
    () => blockAxes(units, state.segments, state.hideSpecial));
  const blocks = heads.map((h) => {
    const head = h === null ? 0 : h;
    const key = `${state.matrix}|${state.layer}|${head}|${state.units}`;
    // Cached too: a token or zoom change redraws the same blocks, and at 512 tokens 12 heads are 3 M copies.
    return cache.get(`b|${key}|${state.segments}|${state.hideSpecial}|${state.renormalize}`, () => {
      const matrix = cache.get(`m|${key}`,
        () => mergeUnits(layerMatrix(set, T, payload.heads, state.layer, head), T, units));
      const block = makeBlock(matrix, units.count, axes, state.renormalize);
      block.head = h === "all" ? null : h;
      return block;
    });
  });
  return { set, units, axes, blocks };
}
