// What the views draw, made in the page from the model's float32 outputs: the object the views' decoder gives
// (decode.mjs: decodePayload, decodeQueryKey), handed to mount as it is. Nothing is encoded to be decoded again.
// The numbers are those of Python's payload (views/payload.py), so that the views show the same as the app's: floor
// 8-bit codes, head statistics as in analysis/attention.py, word ids as payload.wordpiece_word_ids, int8 queries
// and keys with one scale per head, the model's score terms in int8 with one scale per row (rollout and the terms
// come from the graph, onnx_export.py).

import { HEADS } from "../../views/js/heads.mjs";

// Value-weighted attention needs the values' norms, which the page's graph does not return: the matrix sets are
// attention and rollout.

/** codes = min(floor(v * 255), 255), negatives 0 (payload.quantize_floor8 with max 1). */
export function quantizeFloor8(values) {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const c = Math.floor(values[i] * 255);
    out[i] = c < 0 ? 0 : c > 255 ? 255 : c;
  }
  return out;
}

/** A head's role from its shares ({cls, sep, ...}: HEADS.shares' names) and its entropy over a uniform row's: the
 *  rule of bertviz_app/heads.py `roles` (the largest share first of HEADS.shares on a tie). */
export function roleOf(shares, entropyRatio) {
  let best = null;
  for (const n of Object.keys(HEADS.shares)) if (best === null || shares[n] > shares[best]) best = n;
  if (shares[best] >= HEADS.dominantShare) return HEADS.shares[best];
  return entropyRatio >= HEADS.broadEntropy ? HEADS.broad : HEADS.mixed;
}

/** Every head's statistics and its role (analysis.head_statistics): {entropy, distance, cls, sep, self, previous,
 *  next} as Float32Array (L * h), dominant as L x h strings. */
export function headStatistics(att, L, H, T, special) {
  const stats = Object.fromEntries(HEADS.statistics.map((n) => [n, new Float32Array(L * H)]));
  const dominant = [];
  const uniform = T > 1 ? Math.log(T) : 1;
  for (let l = 0; l < L; l++) {
    const row = [];
    for (let h = 0; h < H; h++) {
      const base = (l * H + h) * T * T;
      let entropy = 0, distance = 0, cls = 0, sep = 0, self = 0, previous = 0, next = 0;
      for (let i = 0; i < T; i++) {
        for (let j = 0; j < T; j++) {
          const a = att[base + i * T + j];
          entropy -= a * Math.log(Math.max(a, 1e-12));
          distance += a * Math.abs(i - j);
          if (j === 0 && special[0]) cls += a;
          else if (special[j]) sep += a;
        }
        self += att[base + i * T + i];
        if (i + 1 < T) {
          previous += att[base + (i + 1) * T + i];
          next += att[base + i * T + i + 1];
        }
      }
      const k = l * H + h;
      const shares = { cls: cls / T, sep: sep / T, self: self / T, previous: T > 1 ? previous / (T - 1) : 0,
        next: T > 1 ? next / (T - 1) : 0 };
      stats.entropy[k] = entropy / T;
      stats.distance[k] = distance / T;
      for (const n of Object.keys(HEADS.shares)) stats[n][k] = shares[n];
      row.push(roleOf(shares, entropy / T / uniform));
    }
    dominant.push(row);
  }
  return { stats, dominant };
}

/** One id per token for the words mode (payload.wordpiece_word_ids). */
export function wordIds(tokens, special) {
  const ids = [];
  let current = -1;
  tokens.forEach((t, i) => {
    const continues = !special[i] && t.startsWith("##") && i > 0 && !special[i - 1];
    current += continues ? 0 : 1;
    ids.push(current);
  });
  return ids;
}

const ATTENTION_SETS = { attention: "attention", rollout: "attention rollout" };

/** The attention data of one input, as decodePayload gives it: attentionData({tokens, segments, special, attention
 *  (Float32Array (L, h, T, T)), rollout (Float32Array (L, T, T): the graph computes it), layers, heads, model,
 *  title, text, key}). */
export function attentionData(input) {
  const { tokens, segments, special, attention, layers: L, heads: H } = input;
  const T = tokens.length;
  const { stats, dominant } = headStatistics(attention, L, H, T, special);
  const sets = {};
  for (const [name, label] of Object.entries(ATTENTION_SETS)) {
    sets[name] = { name, label, perHead: name === "attention", rowsSumToOne: true,
      codes: quantizeFloor8(input[name]), max: 1.0 };
  }
  return { key: input.key || "", model: input.model || "", title: input.title || "", text: input.text || "",
    tokens, length: T, layers: L, heads: H, segments: Uint8Array.from(segments), special: Uint8Array.from(special),
    words: Int32Array.from(wordIds(tokens, special)), sets, statistics: stats, dominant, queryKey: null };
}

/** codes (Int8Array) and one scale (Float32Array (groups)) per `size` consecutive values of x, as payload._add_int8:
 *  per head of queries or keys (L, h, T, d), per row of score terms (L, h, n, T, T). */
export function quantizeSymmetric8(x, groups, size) {
  const scale = new Float32Array(groups);
  const codes = new Int8Array(x.length);
  for (let k = 0; k < groups; k++) {
    let max = 0;
    for (let i = k * size; i < (k + 1) * size; i++) max = Math.max(max, Math.abs(x[i]));
    const s = max > 0 ? Math.fround(max / 127) : 1;
    scale[k] = s;
    for (let i = k * size; i < (k + 1) * size; i++) codes[i] = Math.max(-127, Math.min(127, Math.round(x[i] / s)));
  }
  return { codes, scale };
}

/** The query/key data of one input, as decodeQueryKey gives it: queries and keys Float32Array (L, h, T, d).
 *  scores: the model's score terms from the graph ({names, values: Float32Array (L, h, n, T, T), scale: the factor
 *  of q.k}), quantized as the server's blob quantizes them (payload.encode_query_key: int8, one scale per row of T
 *  keys), or null (none: the view shows the model's attention row, as the app's does past its cap). */
export function queryKeyData(queries, keys, L, H, T, d, key = "", scores = null) {
  const q = quantizeSymmetric8(queries, L * H, T * d);
  const k = quantizeSymmetric8(keys, L * H, T * d);
  let terms = null;
  if (scores) {
    const rows = quantizeSymmetric8(scores.values, L * H * scores.names.length * T, T);
    terms = { names: scores.names, codes: rows.codes, scale: rows.scale };
  }
  return { header: { kind: "query_key", key, layers: L, heads: H, length: T, head_size: d }, layers: L, heads: H,
    length: T, headSize: d, queries: q.codes, keys: k.codes, queryScale: q.scale, keyScale: k.scale,
    terms, scoreScale: scores ? scores.scale ?? null : null };
}
