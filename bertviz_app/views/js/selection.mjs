// The one shared selection: every control writes it, every view reads it; views never call each other.

import { SEGMENT_FILTERS } from "./data.mjs";
import { ZOOMS } from "./layout.mjs";

export const VIEWS = ["lines", "matrix", "overview", "qk"];

/**
 * The state, with its defaults:
 *   view       which view is shown: lines | matrix | overview | qk
 *   layer      0 .. L-1
 *   head       0 .. H-1, or "all" (the layer's heads as colors in the lines view, their mean in the matrix)
 *   token      the selected token (an index into the payload's tokens) or null
 *   direction  "from" (what the token attends to) or "to" (what attends to it)
 *   segments   all | A->A | A->B | B->A | B->B (rows of the first sentence, columns of the second)
 *   hideSpecial  hide [CLS] and [SEP]; renormalize: rows rescaled to sum to one over what is shown
 *   units      tokens | words; matrix: a matrix set of the payload (attention, rollout, ...)
 *   scale      linear | sqrt colors; zoom: fit | 2 | 4 | labels; expand: the query/key view's q x k columns
 */
export function defaultState(payload) {
  return { view: "lines", layer: 0, head: 0, token: null, direction: "from", segments: "all",
    hideSpecial: false, renormalize: false, units: "tokens", matrix: "attention", scale: "sqrt",
    zoom: "fit", expand: false };
}

/** A valid state: out-of-range numbers are clamped, unknown choices fall back to the defaults. */
export function constrain(state, payload) {
  const d = defaultState(payload);
  const out = { ...d, ...state };
  const clampInt = (v, hi, fallback) => (Number.isFinite(Number(v)) ? Math.min(hi, Math.max(0, Math.trunc(Number(v))))
    : fallback);
  out.layer = clampInt(out.layer, payload.layers - 1, 0);
  out.head = out.head === "all" ? "all" : clampInt(out.head, payload.heads - 1, 0);
  out.token = out.token === null || out.token === "" || out.token === undefined ? null
    : clampInt(out.token, payload.length - 1, null);
  const oneOf = (key, options) => { if (!options.includes(out[key])) out[key] = d[key]; };
  oneOf("view", VIEWS);
  oneOf("direction", ["from", "to"]);
  oneOf("segments", SEGMENT_FILTERS);
  oneOf("units", ["tokens", "words"]);
  oneOf("scale", ["linear", "sqrt"]);
  oneOf("zoom", ZOOMS);
  if (!(out.matrix in payload.sets)) out.matrix = "attention";
  out.hideSpecial = Boolean(out.hideSpecial);
  out.renormalize = Boolean(out.renormalize);
  out.expand = Boolean(out.expand);
  return out;
}

/** What a view drew, as a short string a test or a benchmark can wait for (the root's data-drawn). */
export function drawnKey(state) {
  return `${state.matrix} layer=${state.layer} head=${state.head} token=${state.token} ${state.units} `
    + `${state.segments} hide=${state.hideSpecial} renorm=${state.renormalize} zoom=${state.zoom}`;
}

/**
 * createSelection(payload, initial) -> { get(), set(patch), subscribe(fn) -> unsubscribe }.
 * set() constrains the new state and calls every subscriber with (state, changed) where changed is the Set of
 * keys whose value changed; a patch that changes nothing calls nobody.
 */
export function createSelection(payload, initial = {}) {
  let state = constrain(initial, payload);
  const listeners = new Set();
  return {
    get: () => state,
    set(patch) {
      const next = constrain({ ...state, ...patch }, payload);
      const changed = new Set(Object.keys(next).filter((k) => next[k] !== state[k]));
      if (changed.size === 0) return;
      state = next;
      for (const fn of [...listeners]) fn(state, changed);
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}
