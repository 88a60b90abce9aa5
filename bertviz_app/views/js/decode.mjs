// Reading the blobs that bertviz_app/views/payload.py writes (the layout is documented there). Nothing here
// draws: a payload could as well come from a model running in the page, as long as it has the same shape.

const MAGIC = "BVIZ";
export const FORMAT_VERSION = 1;
const ARRAYS = { u8: Uint8Array, i8: Int8Array, u16: Uint16Array, i32: Int32Array, f32: Float32Array };

/** Uint8Array from a Uint8Array, an ArrayBuffer, a typed-array view or a base64 string. */
export function toBytes(input) {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (typeof input === "string") return base64ToBytes(input);
  throw new TypeError("a payload must be bytes (Uint8Array, ArrayBuffer) or a base64 string");
}

export function base64ToBytes(text) {
  const binary = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes) {
  let binary = "";
  const chunk = 0x8000; // String.fromCharCode takes its arguments on the stack: feed it in slices
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

export async function inflateRaw(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Split a blob into its header and the undecoded bytes of each section. */
export function readContainer(bytes) {
  if (bytes.length < 12) throw new Error("too short to be a bertviz views payload");
  const magic = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
  if (magic !== MAGIC) throw new Error("not a bertviz views payload (wrong magic bytes)");
  if (bytes[4] !== FORMAT_VERSION) {
    throw new Error(`payload format version ${bytes[4]}; this page reads version ${FORMAT_VERSION}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(8, true);
  const start = 12 + headerLength;
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, start)));
  const raw = {};
  for (const s of header.sections) raw[s.name] = bytes.subarray(start + s.offset, start + s.offset + s.length);
  return { header, raw };
}

/** Every section as a typed array of its stored dtype (flat, row-major; shape in header.sections). */
export async function decodeBlob(input) {
  const { header, raw } = readContainer(toBytes(input));
  const arrays = {};
  await Promise.all(header.sections.map(async (s) => {
    const Type = ARRAYS[s.dtype];
    if (!Type) throw new Error(`section ${s.name} has an unknown dtype ${s.dtype}`);
    let data = raw[s.name];
    if (s.codec === "deflate-raw") data = await inflateRaw(data);
    else if (s.codec !== "none") throw new Error(`section ${s.name} has an unknown codec ${s.codec}`);
    // Copy into a fresh, aligned buffer: a typed array of 4-byte values cannot start at an odd offset.
    const copy = data.slice();
    const size = s.shape.reduce((a, b) => a * b, 1);
    if (copy.byteLength !== size * Type.BYTES_PER_ELEMENT) throw new Error(`section ${s.name} has the wrong size`);
    arrays[s.name] = new Type(copy.buffer, 0, size);
  }));
  return { header, arrays };
}

/**
 * The attention payload as the views use it:
 *   tokens (T strings), length T, layers L, heads H, segments/special (Uint8Array T), words (Int32Array T),
 *   sets: name -> {label, perHead, rowsSumToOne, codes (Uint8Array, (L, H, T, T) or (L, T, T)), max},
 *   statistics: name -> Float32Array (L * H) or null, dominant: L x H labels or null,
 *   queryKey: null until a query/key blob is attached (attachQueryKey).
 */
export async function decodePayload(input) {
  const { header, arrays } = await decodeBlob(input);
  if (header.kind !== "attention") throw new Error(`expected an attention payload, got ${header.kind}`);
  const T = header.length;
  if (header.tokens.length !== T) throw new Error("the payload's token list does not match its length");
  const sets = {};
  for (const [name, s] of Object.entries(header.matrix_sets)) {
    const section = header.sections.find((x) => x.name === s.section);
    sets[name] = { name, label: s.label, perHead: s.per_head, rowsSumToOne: s.rows_sum_to_one,
      codes: arrays[s.section], max: section.quant.max };
  }
  let statistics = null;
  if (header.statistics) {
    const all = arrays[header.statistics.section];
    const size = header.layers * header.heads;
    statistics = {};
    header.statistics.names.forEach((name, k) => { statistics[name] = all.subarray(k * size, (k + 1) * size); });
  }
  return {
    header, key: header.key, model: header.model, title: header.title, text: header.text,
    tokens: header.tokens, length: T, layers: header.layers, heads: header.heads,
    segments: arrays.segments, special: arrays.special, words: arrays.words,
    sets, statistics, dominant: header.dominant || null, queryKey: null,
  };
}

/**
 * The query/key blob: queries and keys as Int8Array (L, H, T, d) codes with Float32Array (L * H) scales.
 * Given the payload it belongs to, refuses a blob of another input. `terms`: the model's named additive terms of
 * every score, each already scaled, as the model computed them: names (["q.k"], or ["q.k", "c2p", "p2c"] for
 * DeBERTa: whatever the model says), codes Int8Array (L, H, n, T, T) and a Float32Array scale per row (L, H, n, T);
 * null when the blob carries none (an input too long for them, a page that computes only queries and keys).
 * scoreScale: the model's factor of q·k, for the words beside the arithmetic (null when unknown). An object of that
 * shape (with its header) is checked against the payload and returned as it is.
 */
export async function decodeQueryKey(input, payload = null) {
  if (input && input.queries && input.header) { // decoded already: a page that runs the model made it
    checkBelongs(input.header, payload);
    return input;
  }
  const { header, arrays } = await decodeBlob(input);
  if (header.kind !== "query_key") throw new Error(`expected a query/key blob, got ${header.kind}`);
  checkBelongs(header, payload);
  const st = header.score_terms;
  const terms = st ? { names: st.names, codes: arrays[st.section], scale: arrays[`${st.section}_scale`] } : null;
  return { header, layers: header.layers, heads: header.heads, length: header.length, headSize: header.head_size,
    queries: arrays.queries, keys: arrays.keys, queryScale: arrays.queries_scale, keyScale: arrays.keys_scale,
    terms, scoreScale: st && st.scale != null ? st.scale : null };
}

/** Refuses a query/key header that belongs to another input than `payload` (if given). */
function checkBelongs(header, payload) {
  if (!payload) return;
  const same = header.layers === payload.layers && header.heads === payload.heads && header.length === payload.length;
  if (!same || (header.key && payload.key && header.key !== payload.key)) {
    throw new Error("these query/key vectors belong to another input; analyze again to load the matching ones");
  }
}
