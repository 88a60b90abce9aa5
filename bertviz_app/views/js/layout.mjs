// Pure layout: how big a row or cell is at each zoom, which rows are on screen, which labels fit.

export const ZOOMS = ["fit", "2", "4", "labels"];
export const LABEL_FONT_PX = 15; // tokens must be read from the back of a classroom
export const LABEL_PITCH = LABEL_FONT_PX + 3; // the smallest row that still carries its own label
// Rows a little short of LABEL_PITCH carry labels down to this size rather than lose every other label or push the
// last rows out of the box: a 16-token sentence fits the app's first box at 1280 x 720 (13 px at 16 px rows).
export const FIT_LABEL_PX = 13;
const FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';

/**
 * The token labels' type for rows (or cells) `pitch` pixels apart: LABEL_FONT_PX, grown with the rows up to
 * `largest` px (a host's presenter mode asks for more, through the CSS variable --bv-label-max; by default the type
 * never grows); rows of FIT_LABEL_PX + 3 to LABEL_PITCH pixels get the type that fits them, so that each keeps its
 * label. { px, pitch: the smallest row that carries such a label, font, bold }. `smallest` replaces LABEL_FONT_PX
 * where a theme asks for larger type (the projector's): rows that carry it get at least that.
 */
export function labelType(pitch, largest = LABEL_FONT_PX, smallest = LABEL_FONT_PX) {
  const fits = Math.floor(pitch) - 3;
  const px = fits >= FIT_LABEL_PX && fits < smallest ? fits : Math.max(smallest, Math.min(largest, fits));
  return { px, pitch: px + 3, font: `${px}px ${FAMILY}`, bold: `bold ${px}px ${FAMILY}` };
}

/**
 * Pixels per row (or cell) for n rows in `available` pixels. 'fit': everything in the box (at least `min`);
 * '2', '4': that many times the fitted size; 'labels': large enough for every label (the fitted size where it
 * carries FIT_LABEL_PX labels, else LABEL_PITCH), never more than `max` unless zoomed.
 */
export function pitchFor(n, available, zoom, { min = 1, max = 28 } = {}) {
  const fit = Math.max(min, Math.min(max, available / Math.max(n, 1)));
  if (zoom === "2" || zoom === "4") return fit * Number(zoom);
  if (zoom === "labels") return fit >= FIT_LABEL_PX + 3 ? fit : Math.max(fit, LABEL_PITCH);
  return fit;
}

/** The zoom a view opens with: every label when that costs at most about two screens of scrolling. */
export function defaultZoom(n, available) {
  return n * LABEL_PITCH <= 2 * available ? "labels" : "fit";
}

/** First and last row index (inclusive) with any part inside [offset, offset + extent) of content pixels. */
export function visibleRange(offset, extent, start, pitch, n) {
  const first = Math.max(0, Math.floor((offset - start) / pitch));
  const last = Math.min(n - 1, Math.ceil((offset + extent - start) / pitch));
  return [first, last];
}

/**
 * Which rows between first and last get a label, when a label needs `gap` pixels and rows are `pitch` apart.
 * The `priority` rows (hovered, selected) are always labeled, and a label too close to one of them makes way;
 * the others follow a regular stride anchored at row 0, so scrolling does not make labels jump.
 */
export function thinLabels(first, last, pitch, gap, priority = []) {
  const keep = [...new Set(priority.filter((i) => i !== null && i >= first && i <= last))];
  const stride = Math.max(1, Math.ceil(gap / pitch - 1e-9));
  const clear = (i) => keep.every((p) => p === i || Math.abs(p - i) * pitch >= gap);
  const out = new Set(keep);
  for (let i = Math.ceil(first / stride) * stride; i <= last; i += stride) {
    if (clear(i)) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** Shorten a label to `max` characters with an ellipsis; tokens of a words view can be long. */
export function truncate(text, max) {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, Math.max(1, max - 1)).join("")}\u2026`;
}

/**
 * The smallest weight to draw so that at most `budget` of `values` are drawn (all of them when they fit):
 * a 512-token head has 262,144 lines, a screen can show a few thousand.
 */
export function weightFloor(values, budget, minimum = 0) {
  let count = 0;
  for (let k = 0; k < values.length; k++) if (values[k] >= minimum) count++;
  if (count <= budget) return minimum;
  const bins = 1024; // weights in [0, 1]: a histogram finds the cut without sorting a quarter million values
  const hist = new Uint32Array(bins + 1);
  for (let k = 0; k < values.length; k++) {
    const v = values[k];
    if (v >= minimum) hist[Math.min(bins, Math.floor(v * bins))]++;
  }
  let kept = 0;
  for (let b = bins; b >= 0; b--) {
    if (kept + hist[b] > budget) return Math.max(minimum, (b + 1) / bins);
    kept += hist[b];
  }
  return minimum;
}
