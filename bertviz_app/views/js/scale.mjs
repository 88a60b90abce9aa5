// Color scales and number formats. Pure: colors come out as "#rrggbb" strings or as lookup tables for
// ImageData, where one table lookup per cell is all a 512 x 512 heatmap can afford.

// White (nothing) to dark blue (everything): empty cells vanish into the page, strong ones read on a projector.
export const ATTENTION_STOPS = ["#ffffff", "#e3eef9", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5",
  "#08519c", "#08306b"];
// Negative blue, zero white, positive red: signs of query and key components and their products.
export const DIVERGING_STOPS = ["#1d4f91", "#4a86c5", "#a7c8e6", "#ffffff", "#f2b09a", "#d6604d", "#9b1b1e"];
export const FLAGGED_COLOR = "#d9d2c5"; // rows with too little attention left to renormalize
export const BOUNDARY_COLOR = "#d62728"; // where sentence B starts
export const SELECTED_COLOR = "#ff7f0e";

// Hues for the heads of one layer, told apart on a projector; beyond 12 heads, more come from the golden angle.
const HEAD_COLORS = ["#2f6db5", "#e0702a", "#2e9e4a", "#c9302c", "#8a5cc2", "#8c564b", "#d45fb0", "#6f6f6f",
  "#a5a521", "#1ba3b8", "#3b3b98", "#e6a400"];

export function headColor(head) {
  if (head < HEAD_COLORS.length) return HEAD_COLORS[head];
  return `hsl(${Math.round((head * 137.508) % 360)}, 60%, 42%)`;
}

/** How the all-heads lines draw a head: { color, dash (a canvas line dash, [] for solid) }. A palette with
 * headMarks (palette.mjs) has fewer colours than heads: its dashes tell apart the heads that share a colour. */
export function headStyle(head, theme) {
  const marks = theme?.headMarks;
  if (!marks) return { color: headColor(head), dash: [] };
  const n = marks.colors.length;
  return { color: marks.colors[head % n], dash: marks.dashes[Math.floor(head / n) % marks.dashes.length] };
}

export function parseHex(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** n RGBA entries (Uint8ClampedArray of 4n) interpolated evenly through the stops. */
export function makeLUT(stops, n = 256) {
  const rgb = stops.map(parseHex);
  const out = new Uint8ClampedArray(n * 4);
  for (let k = 0; k < n; k++) {
    const x = (k / (n - 1)) * (rgb.length - 1);
    const i = Math.min(Math.floor(x), rgb.length - 2);
    const f = x - i;
    for (let c = 0; c < 3; c++) out[k * 4 + c] = Math.round(rgb[i][c] + (rgb[i + 1][c] - rgb[i][c]) * f);
    out[k * 4 + 3] = 255;
  }
  return out;
}

export function lutColor(lut, index) {
  const k = index * 4;
  return `rgb(${lut[k]},${lut[k + 1]},${lut[k + 2]})`;
}

/**
 * A weight in [0, 1] to a table index 0..255. 'sqrt' spreads the small weights apart (0.01 lands a tenth of
 * the way up instead of at white), which is where most of a long input's attention lives.
 */
export function weightIndex(v, scale) {
  if (!(v > 0)) return 0;
  const t = scale === "sqrt" ? Math.sqrt(Math.min(v, 1)) : Math.min(v, 1);
  return Math.round(t * 255);
}

/** A signed value scaled by `limit` (its largest magnitude) to 0..255, 128 being zero. */
export function signedIndex(v, limit) {
  if (!(limit > 0)) return 128;
  const t = Math.max(-1, Math.min(1, v / limit));
  return Math.round(127.5 + t * 127.5);
}

/** Fill RGBA pixels (Uint8ClampedArray) from block values through the table; NaN (flagged) gets its own color. */
export function paintValues(pixels, values, lut, scale) {
  const flagged = parseHex(FLAGGED_COLOR);
  for (let k = 0; k < values.length; k++) {
    const v = values[k];
    const p = k * 4;
    if (Number.isNaN(v)) {
      pixels[p] = flagged[0]; pixels[p + 1] = flagged[1]; pixels[p + 2] = flagged[2];
    } else {
      const c = weightIndex(v, scale) * 4;
      pixels[p] = lut[c]; pixels[p + 1] = lut[c + 1]; pixels[p + 2] = lut[c + 2];
    }
    pixels[p + 3] = 255;
  }
  return pixels;
}

/** An attention weight for people: two decimals, as 8-bit storage is good to about 0.004. */
export function formatWeight(v) {
  if (Number.isNaN(v)) return "n/a";
  if (v > 0 && v < 0.005) return "<0.01";
  return v.toFixed(2);
}

export function formatShare(v) {
  return `${Math.round(v * 100)}%`;
}

export function formatNumber(v, digits = 2) {
  if (!Number.isFinite(v)) return String(v);
  const text = v.toFixed(digits);
  return text.startsWith("-") ? `\u2212${text.slice(1)}` : text; // a real minus sign reads better in a room
}
