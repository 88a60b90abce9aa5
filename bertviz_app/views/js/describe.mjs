// The views' text alternative, as pure functions of a decoded payload and the selection: one sentence a screen
// reader reads for the head on screen, and the same numbers as table rows (the head's matrix, a token's strongest
// links). main.mjs puts them in the page; the picture's pixels are never their source.

import { layerMatrix } from "./data.mjs";
import { t } from "./i18n.mjs";

const SPECIAL = new Set(["[CLS]", "[SEP]", "<s>", "</s>"]);

/** Where a row's strongest column lies, in words a student uses: a special token by name, or a neighbour. */
export function relation(tokens, i, j) {
  if (SPECIAL.has(tokens[j])) return tokens[j]; // a [SEP]-watching head is named so, whatever its neighbours
  if (j === i) return t("itself");
  if (j === i - 1) return t("the previous token");
  if (j === i + 1) return t("the next token");
  return null;
}

/** The head on screen's matrix (heads "all": their mean), rows = queries. */
export function headMatrix(payload, state) {
  return layerMatrix(payload.sets.attention, payload.length, payload.heads, state.layer, state.head);
}

/** Row i's columns by weight, strongest first: [{ to, weight }] (n of them). */
export function topLinks(matrix, T, i, n = 5) {
  const row = Array.from({ length: T }, (_, j) => ({ to: j, weight: matrix[i * T + j] }));
  return row.sort((a, b) => b.weight - a.weight || a.to - b.to).slice(0, n);
}

const quoted = (token) => `\u2018${token}\u2019`;
export const weightText = (w) => w.toFixed(2);

/**
 * One sentence for the head on screen: "Layer 3, head 2: most tokens attend to the previous token; ‘cat’ attends
 * most to ‘the’ (0.62)". The habit is the strongest column's relation shared by most rows (half or more), else
 * that no habit is shared; the link named is the selected token's strongest, or without one the strongest cell.
 */
export function describeSelection(payload, state) {
  const T = payload.length;
  const tokens = payload.tokens;
  const matrix = headMatrix(payload, state);
  const head = state.head === "all" ? t("the mean of its {n} heads", { n: payload.heads })
    : t("head {head}", { head: state.head });
  const counts = new Map();
  let best = { from: 0, to: 0, weight: -1 };
  for (let i = 0; i < T; i++) {
    const [top] = topLinks(matrix, T, i, 1);
    const r = relation(tokens, i, top.to);
    if (r) counts.set(r, (counts.get(r) || 0) + 1);
    if (top.weight > best.weight) best = { from: i, ...top };
  }
  const [habit, many] = [...counts].sort((a, b) => b[1] - a[1])[0] || [null, 0];
  const habitText = habit && many * 2 >= T ? t("most tokens attend to {habit} ({many} of {n})", { habit, many, n: T })
    : t("no single habit: the tokens' strongest links differ");
  const token = Number.isInteger(state.token) && state.token < T ? state.token : null;
  const link = token === null ? best : { from: token, ...topLinks(matrix, T, token, 1)[0] };
  const linkText = (token === null ? t("the strongest link: ") : "")
    + t("{from} (token {i}) attends most to {to} (token {j}, {weight})", { from: quoted(tokens[link.from]),
      i: link.from, to: quoted(tokens[link.to]), j: link.to, weight: weightText(link.weight) });
  return t("Layer {layer}, {head}: {habit}; {link}.", { layer: state.layer, head, habit: habitText, link: linkText });
}

/** The head's matrix as table rows: a header of the key tokens, then one row per query token. */
export function matrixRows(payload, state) {
  const T = payload.length;
  const matrix = headMatrix(payload, state);
  const label = (i) => `${i}: ${payload.tokens[i]}`;
  return {
    header: [t("query \\ key"), ...payload.tokens.map((_, j) => label(j))],
    rows: payload.tokens.map((_, i) => [label(i), ...Array.from({ length: T }, (_, j) => weightText(matrix[i * T + j]))]),
  };
}

/** The selected token's (or, without one, [CLS]'s) five strongest links as table rows. */
export function linkRows(payload, state) {
  const T = payload.length;
  const token = Number.isInteger(state.token) && state.token < T ? state.token : 0;
  const links = topLinks(headMatrix(payload, state), T, token, Math.min(5, T));
  return {
    caption: t("The strongest links of {token} (token {i})", { token: quoted(payload.tokens[token]), i: token }),
    header: [t("rank"), t("key token"), t("weight")],
    rows: links.map((l, k) => [String(k + 1), `${l.to}: ${payload.tokens[l.to]}`, weightText(l.weight)]),
  };
}
