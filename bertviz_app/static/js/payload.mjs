// The views' payload (the container bertviz_app/views/payload.py documents) written in the page from the model's
// float32 outputs, so that the views' own decoder and mount take it as they take the server's. Sections are stored
// uncompressed (codec "none"): nothing travels, and deflating 19 M codes at 512 tokens would only cost time. The
// numbers are those of payload.py: floor 8-bit codes, head statistics as in analysis/attention.py (rollout comes
// from the graph, onnx_export.py).

const SHARES = { cls: "[CLS]", sep: "[SEP]", self: "self", previous: "previous token", next: "next token" };
const DOMINANT_SHARE = 0.5;
const BROAD_ENTROPY = 0.75;
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

/** Every head's statistics and its dominant label (analysis.head_statistics): {entropy, distance, cls, sep, self,
 *  previous, next} as Float32Array (L * h), dominant as L x h strings. */
export function headStatistics(att, L, H, T, special) {
  const names = ["entropy", "distance", "cls", "sep", "self", "previous", "next"];
  const stats = Object.fromEntries(names.map((n) => [n, new Float32Array(L * H)]));
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
      for (const n of Object.keys(SHARES)) stats[n][k] = shares[n];
      let best = "cls";
      for (const n of Object.keys(SHARES)) if (shares[n] > shares[best]) best = n;
      row.push(shares[best] >= DOMINANT_SHARE ? SHARES[best]
        : stats.entropy[k] >= BROAD_ENTROPY * uniform ? "broad" : "mixed");
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

function container(header, sections) {
  let offset = 0;
  const described = sections.map(({ name, dtype, shape, data, ...meta }) => {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const s = { name, dtype, shape, codec: "none", offset, length: bytes.length, ...meta };
    offset += bytes.length;
    return s;
  });
  const text = new TextEncoder().encode(JSON.stringify({ format: "bertviz-views", version: 1, ...header,
    sections: described }));
  const out = new Uint8Array(12 + text.length + offset);
  out.set([0x42, 0x56, 0x49, 0x5a, 1, 0, 0, 0]); // "BVIZ", version 1, reserved
  new DataView(out.buffer).setUint32(8, text.length, true);
  out.set(text, 12);
  let at = 12 + text.length;
  for (const { data } of sections) {
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    at += data.byteLength;
  }
  return out;
}

/** The attention payload of one input: encodePayload({tokens, segments, special, attention (Float32Array
 *  (L, h, T, T)), rollout (Float32Array (L, T, T): the graph computes it), layers, heads, model, title, text,
 *  key}) -> Uint8Array. */
export function encodePayload(input) {
  const { tokens, segments, special, attention, layers: L, heads: H } = input;
  const T = tokens.length;
  const quant = { scheme: "floor", bits: 8, max: 1.0 };
  const { stats, dominant } = headStatistics(attention, L, H, T, special);
  const names = Object.keys(stats);
  const stacked = new Float32Array(names.length * L * H);
  names.forEach((n, k) => stacked.set(stats[n], k * L * H));
  const sections = [
    { name: "segments", dtype: "u8", shape: [T], data: Uint8Array.from(segments) },
    { name: "special", dtype: "u8", shape: [T], data: Uint8Array.from(special) },
    { name: "words", dtype: "i32", shape: [T], data: Int32Array.from(wordIds(tokens, special)) },
    { name: "attention", dtype: "u8", shape: [L, H, T, T], data: quantizeFloor8(attention), quant },
    { name: "rollout", dtype: "u8", shape: [L, T, T], data: quantizeFloor8(input.rollout), quant },
    { name: "statistics", dtype: "f32", shape: [names.length, L, H], data: stacked },
  ];
  const header = { kind: "attention", key: input.key || "", model: input.model || "", title: input.title || "",
    text: input.text || "", tokens, layers: L, heads: H, length: T,
    matrix_sets: {
      attention: { section: "attention", label: "attention", per_head: true, rows_sum_to_one: true },
      rollout: { section: "rollout", label: "attention rollout", per_head: false, rows_sum_to_one: true },
    },
    statistics: { section: "statistics", names }, dominant };
  return container(header, sections);
}

/** The query/key blob (payload.encode_query_key): queries and keys Float32Array (L, h, T, d). */
export function encodeQueryKey(queries, keys, L, H, T, d, key = "") {
  const sections = [];
  for (const [name, x] of [["queries", queries], ["keys", keys]]) {
    const scale = new Float32Array(L * H);
    const codes = new Int8Array(x.length);
    for (let k = 0; k < L * H; k++) {
      let max = 0;
      for (let i = k * T * d; i < (k + 1) * T * d; i++) max = Math.max(max, Math.abs(x[i]));
      const s = max > 0 ? Math.fround(max / 127) : 1;
      scale[k] = s;
      for (let i = k * T * d; i < (k + 1) * T * d; i++) {
        codes[i] = Math.max(-127, Math.min(127, Math.round(x[i] / s)));
      }
    }
    sections.push({ name, dtype: "i8", shape: [L, H, T, d], data: codes,
      quant: { scheme: "symmetric", bits: 8, scale: `${name}_scale` } });
    sections.push({ name: `${name}_scale`, dtype: "f32", shape: [L, H], data: scale });
  }
  return container({ kind: "query_key", key, layers: L, heads: H, length: T, head_size: d }, sections);
}
