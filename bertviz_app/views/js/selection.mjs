// The one shared selection: every control writes it, every view reads it; views never call each other.

import { SEGMENT_FILTERS } from "./data.mjs";
import { ZOOMS } from "./layout.mjs";

/**
 * The state, with its defaults:
 *   view       which view is shown: a name of registry.mjs (lines | matrix | overview | qk)
 *   layer      0 .. L-1
 *   head       0 .. H-1, or "all" (the layer's heads as colors in the lines view, their mean in the matrix)
 *   token      the selected token (an index into the payload's tokens) or null
 *   direction  "from" (what the token attends to) or "to" (what attends to it)
 *   segments   all | A->A | A->B | B->A | B->B (rows of the first sentence, columns of the second)
 *   hideSpecial  hide [CLS] and [SEP]; renormalize: rows rescaled to sum to one over what is shown
 *   units      tokens | words; matrix: a matrix set of the payload (attention, rollout, ...)
 *   scale      linear | sqrt colors; zoom: fit | 2 | 4 | labels; expand: the query/key view's q x k columns
 *   silenced   heads picked to silence, [[layer, head], ...]: valid pairs only, no duplicates, sorted (a host
 *              with `onSilence` runs the forward pass without them; see main.mjs)
 */
export function defaultState(payload) {
  return { view: "lines", layer: 0, head: 0, token: null, direction: "from", segments: "all",
    hideSpecial: false, renormalize: false, units: "tokens", matrix: "attention", scale: "sqrt",
    zoom: "fit", expand: false, silenced: [] };
}

/**
 * Heads to silence as [[layer, head], ...] that fit the payload: pairs out of range or not whole numbers are
 * dropped (never clamped: that would silence a head nobody picked), duplicates removed, sorted by layer, then head.
 */
export function constrainHeads(list, payload) {
  if (!Array.isArray(list)) return [];
  const seen = new Set();
  const out = [];
  for (const pair of list) {
    if (!Array.isArray(pair) || pair.length !== 2) continue;
    const [layer, head] = pair.map(Number);
    if (!Number.isInteger(layer) || !Number.isInteger(head) || layer < 0 || layer >= payload.layers || head < 0
      || head >= payload.heads || seen.has(layer * payload.heads + head)) continue;
    seen.add(layer * payload.heads + head);
    out.push([layer, head]);
  }
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

/**
 * The picks with a group of heads (one head, a whole layer, a whole head column) toggled as one: removed when all
 * of them are picked already, otherwise added.
 */
export function toggleHeads(list, group) {
  const key = ([l, h]) => `${l},${h}`;
  const picked = new Set(list.map(key));
  if (group.every((pair) => picked.has(key(pair)))) {
    const drop = new Set(group.map(key));
    return list.filter((pair) => !drop.has(key(pair)));
  }
  return [...list, ...group.filter((pair) => !picked.has(key(pair)))];
}

/** Whether a head is among the picks. */
export function isPicked(list, layer, head) {
  return list.some(([l, h]) => l === layer && h === head);
}

/** Equal values of the state: numbers and strings by value, the picks pair by pair. */
export function sameValue(a, b) {
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, k) => sameValue(x, b[k]));
  }
  return a === b;
}

/**
 * A valid state: out-of-range numbers are clamped, unknown choices fall back to the defaults. views: the view names
 * a state may show (the registry's, which main.mjs passes: the registry imports the views, which import this
 * module); without them any name is kept.
 */
export function constrain(state, payload, views = null) {
  const d = defaultState(payload);
  const out = { ...d, ...state };
  const clampInt = (v, hi, fallback) => (Number.isFinite(Number(v)) ? Math.min(hi, Math.max(0, Math.trunc(Number(v))))
    : fallback);
  out.layer = clampInt(out.layer, payload.layers - 1, 0);
  out.head = out.head === "all" ? "all" : clampInt(out.head, payload.heads - 1, 0);
  out.token = out.token === null || out.token === "" || out.token === undefined ? null
    : clampInt(out.token, payload.length - 1, null);
  const oneOf = (key, options) => { if (!options.includes(out[key])) out[key] = d[key]; };
  if (views) oneOf("view", views);
  else if (typeof out.view !== "string") out.view = d.view;
  oneOf("direction", ["from", "to"]);
  oneOf("segments", SEGMENT_FILTERS);
  oneOf("units", ["tokens", "words"]);
  oneOf("scale", ["linear", "sqrt"]);
  oneOf("zoom", ZOOMS);
  if (!(out.matrix in payload.sets)) out.matrix = "attention";
  out.hideSpecial = Boolean(out.hideSpecial);
  out.renormalize = Boolean(out.renormalize);
  out.expand = Boolean(out.expand);
  out.silenced = constrainHeads(out.silenced, payload);
  return out;
}

/** What a view drew, as a short string a test or a benchmark can wait for (the root's data-drawn). */
export function drawnKey(state) {
  return `${state.matrix} layer=${state.layer} head=${state.head} token=${state.token} ${state.units} `
    + `${state.segments} hide=${state.hideSpecial} renorm=${state.renormalize} zoom=${state.zoom}`;
}

/**
 * createSelection(payload, initial, views) -> { get(), set(patch), subscribe(fn) -> unsubscribe }; views: as
 * constrain's.
 * set() constrains the new state and calls every subscriber with (state, changed) where changed is the Set of
 * keys whose value changed (the picks compared pair by pair); a patch that changes nothing calls nobody.
 */
export function createSelection(payload, initial = {}, views = null) {
  let state = constrain(initial, payload, views);
  const listeners = new Set();
  return {
    get: () => state,
    set(patch) {
      const next = constrain({ ...state, ...patch }, payload, views);
      const changed = new Set(Object.keys(next).filter((k) => !sameValue(next[k], state[k])));
      if (changed.size === 0) return;
      for (const k of Object.keys(next)) if (!changed.has(k)) next[k] = state[k]; // unchanged picks keep their array
      state = next;
      for (const fn of [...listeners]) fn(state, changed);
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}
