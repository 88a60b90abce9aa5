// The colour distance the palette tests measure (palette.test.mjs; test_figure_colours.py runs it on the plotly
// figures' colours): the CIEDE2000 difference in CIELAB (D65) after Machado, Oliveira & Fernandes 2009's simulation
// of protanopia, deuteranopia and tritanopia (severity 1.0, applied to linear sRGB), and in normal vision.
import assert from "node:assert/strict";

export const MACHADO = {
  protanopia: [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
  deuteranopia: [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
  tritanopia: [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
};
export const VISIONS = { normal: null, ...MACHADO };

const linear = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
export function hexLinear(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => linear(v / 255));
}
export const simulate = (rgb, m) => (m ? m.map((r) => Math.min(1, Math.max(0, r[0] * rgb[0] + r[1] * rgb[1] + r[2] * rgb[2])))
  : rgb);

/** CIELAB (D65) of linear sRGB. */
export function lab([r, g, b]) {
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
  const z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

/** CIEDE2000 (Sharma, Wu & Dalal 2005's formulation). */
export function ciede2000([L1, a1, b1], [L2, a2, b2]) {
  const rad = Math.PI / 180;
  const Cm = (Math.hypot(a1, b1) + Math.hypot(a2, b2)) / 2;
  const G = 0.5 * (1 - Math.sqrt(Cm ** 7 / (Cm ** 7 + 25 ** 7)));
  const a1p = (1 + G) * a1, a2p = (1 + G) * a2;
  const C1p = Math.hypot(a1p, b1), C2p = Math.hypot(a2p, b2);
  const hue = (b, a) => (a === 0 && b === 0 ? 0 : (Math.atan2(b, a) / rad + 360) % 360);
  const h1p = hue(b1, a1p), h2p = hue(b2, a2p);
  let dhp = 0;
  if (C1p * C2p !== 0) dhp = h2p - h1p > 180 ? h2p - h1p - 360 : h2p - h1p < -180 ? h2p - h1p + 360 : h2p - h1p;
  const dHp = 2 * Math.sqrt(C1p * C2p) * Math.sin((dhp / 2) * rad);
  const Lpm = (L1 + L2) / 2, Cpm = (C1p + C2p) / 2;
  let hpm = h1p + h2p;
  if (C1p * C2p !== 0) {
    hpm = Math.abs(h1p - h2p) <= 180 ? (h1p + h2p) / 2 : h1p + h2p < 360 ? (h1p + h2p + 360) / 2 : (h1p + h2p - 360) / 2;
  }
  const T = 1 - 0.17 * Math.cos((hpm - 30) * rad) + 0.24 * Math.cos(2 * hpm * rad)
    + 0.32 * Math.cos((3 * hpm + 6) * rad) - 0.20 * Math.cos((4 * hpm - 63) * rad);
  const Rc = 2 * Math.sqrt(Cpm ** 7 / (Cpm ** 7 + 25 ** 7));
  const Sl = 1 + (0.015 * (Lpm - 50) ** 2) / Math.sqrt(20 + (Lpm - 50) ** 2);
  const Sc = 1 + 0.045 * Cpm, Sh = 1 + 0.015 * Cpm * T;
  const Rt = -Math.sin(2 * 30 * Math.exp(-(((hpm - 275) / 25) ** 2)) * rad) * Rc;
  const [l, c, h] = [(L2 - L1) / Sl, (C2p - C1p) / Sc, dHp / Sh];
  return Math.sqrt(l * l + c * c + h * h + Rt * c * h);
}

/** The closest pair of `colors` under any of the visions: { d, vision, pair }. */
export function closest(colors) {
  let worst = { d: Infinity };
  for (const [vision, m] of Object.entries(VISIONS)) {
    const seen = colors.map((c) => lab(simulate(hexLinear(c), m)));
    for (let i = 0; i < seen.length; i++) {
      for (let j = i + 1; j < seen.length; j++) {
        const d = ciede2000(seen[i], seen[j]);
        if (d < worst.d) worst = { d, vision, pair: [colors[i], colors[j]] };
      }
    }
  }
  return worst;
}

/** The closest pair of a set of marks drawn on white, each { color, dash }: marks with different dashes are told
 * apart by the dash, so only those that share one must differ in colour; and no two marks may be the same. */
export function closestByDash(marks) {
  const keys = marks.map((m) => `${m.color}|${m.dash.join(",")}`);
  assert.equal(new Set(keys).size, marks.length, `two marks alike: ${keys}`);
  const groups = new Map();
  for (const m of marks) groups.set(m.dash.join(","), [...(groups.get(m.dash.join(",")) || []), m]);
  return [...groups.values()].map((g) => closest(["#ffffff", ...g.map((m) => m.color)]))
    .reduce((a, b) => (b.d < a.d ? b : a));
}

