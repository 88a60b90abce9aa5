// Finding heads worth a look, as pure functions of a decoded payload: the head a page opens on, and for a token
// (or a pair of tokens) the heads where it attends most. Layer 0, head 0 is usually a tangle of near-uniform
// lines, and "it" -> "animal" sits in one head of 72: nothing else on the page leads there.

/** One row of one head's attention, dequantized the way layerMatrix does it (rows of a softmax sum to one). */
export function attentionRow(payload, layer, head, token) {
  const set = payload.sets.attention;
  const T = payload.length;
  const offset = ((layer * payload.heads + head) * T + token) * T;
  const step = set.max / 255;
  let sum = 0;
  for (let j = 0; j < T; j++) sum += set.codes[offset + j];
  const share = set.rowsSumToOne ? Math.min(Math.max(1 - sum * step, 0), T * step) / T : step / 2;
  const out = new Float32Array(T);
  for (let j = 0; j < T; j++) out[j] = set.codes[offset + j] * step + share;
  return out;
}

/**
 * The heads where `token` attends most, strongest first: [{ layer, head, to, weight }]. With `to`, the weight of
 * that one pair; without, each head's strongest link from the token to a token that is not [CLS], [SEP], itself
 * or its neighbor (those take most heads' attention and say little: a previous-token head links every token).
 */
export function strongestHeads(payload, token, { to = null, count = 5 } = {}) {
  const found = [];
  for (let layer = 0; layer < payload.layers; layer++) {
    for (let head = 0; head < payload.heads; head++) {
      const row = attentionRow(payload, layer, head, token);
      let best = to;
      if (best === null) {
        for (let j = 0; j < row.length; j++) {
          if (Math.abs(j - token) <= 1 || payload.special[j]) continue;
          if (best === null || row[j] > row[best]) best = j;
        }
      }
      if (best !== null) found.push({ layer, head, to: best, weight: row[best] });
    }
  }
  found.sort((a, b) => b.weight - a.weight || a.layer - b.layer || a.head - b.head);
  return found.slice(0, count);
}

/**
 * The head a page opens on: the one whose attention is most on other ordinary tokens (not [CLS], [SEP], the
 * token itself, or the one just before or after it) and least spread out, from the payload's head statistics.
 * Layer 0, head 0 when the payload carries none.
 */
export function informativeHead(payload) {
  const s = payload.statistics;
  if (!s || !s.entropy) return { layer: 0, head: 0 };
  const uniform = Math.log(Math.max(payload.length, 2));
  let best = { layer: 0, head: 0, score: -Infinity };
  for (let layer = 0; layer < payload.layers; layer++) {
    for (let head = 0; head < payload.heads; head++) {
      const k = layer * payload.heads + head;
      const content = 1 - s.cls[k] - s.sep[k] - s.self[k] - s.previous[k] - s.next[k];
      const focus = 1 - Math.min(1, s.entropy[k] / uniform); // 0: spread evenly, 1: one token each
      const score = content * focus;
      if (score > best.score + 1e-9) best = { layer, head, score };
    }
  }
  return { layer: best.layer, head: best.head };
}
