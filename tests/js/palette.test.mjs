// palette.mjs: the colour-blind palette's categorical colours stay apart in normal vision and under protanopia,
// deuteranopia and tritanopia, simulated with Machado, Oliveira & Fernandes 2009's matrices (severity 1.0, applied
// to linear sRGB), by the CIEDE2000 difference in CIELAB (D65). The threshold, MIN_DELTA_E = 20: 1 is a difference
// just seen side by side, about 10 one seen at a glance; the colours here are small tiles and legend swatches apart
// from each other, so they get twice that. The default palette is measured too, to show why the choice exists.
import assert from "node:assert/strict";
import { test } from "node:test";

import { COLORBLIND_ROLES, CIVIDIS_STOPS, MIN_DELTA_E, PALETTES } from "../../bertviz_app/views/js/palette.mjs";
import { SELECTED_COLOR, BOUNDARY_COLOR, headStyle } from "../../bertviz_app/views/js/scale.mjs";
import { themeOf } from "../../bertviz_app/views/js/theme.mjs";
import { ROLE_COLORS } from "../../bertviz_app/views/js/timeline.mjs";
import { categoryColors } from "../../bertviz_app/views/js/corpus-data.mjs";
import { SERIES } from "../../bertviz_app/views/js/corpus-cards.mjs";

const MACHADO = {
  protanopia: [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
  deuteranopia: [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
  tritanopia: [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
};
const VISIONS = { normal: null, ...MACHADO };

const linear = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
function hexLinear(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => linear(v / 255));
}
const simulate = (rgb, m) => (m ? m.map((r) => Math.min(1, Math.max(0, r[0] * rgb[0] + r[1] * rgb[1] + r[2] * rgb[2])))
  : rgb);

/** CIELAB (D65) of linear sRGB. */
function lab([r, g, b]) {
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
  const z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

/** CIEDE2000 (Sharma, Wu & Dalal 2005's formulation). */
function ciede2000([L1, a1, b1], [L2, a2, b2]) {
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
function closest(colors) {
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

test("CIEDE2000 gives Sharma et al.'s published differences", () => {
  // pairs 1, 4 and 7 of their table 1
  assert.equal(ciede2000([50, 2.6772, -79.7751], [50, 0, -82.7485]).toFixed(4), "2.0425");
  assert.equal(ciede2000([50, -1.3802, -84.2814], [50, 0, -82.7485]).toFixed(4), "1.0000");
  assert.equal(ciede2000([50, 0, 0], [50, -1, 2]).toFixed(4), "2.3669");
});

test("the simulations keep white and black (each of Machado et al.'s rows sums to 1)", () => {
  for (const m of Object.values(MACHADO)) {
    assert.deepEqual(simulate([0, 0, 0], m), [0, 0, 0]);
    for (const v of simulate([1, 1, 1], m)) assert.ok(Math.abs(v - 1) < 0.002, v);
  }
});

test("every pair of the colour-blind palette's categorical colours stays apart in all four visions", () => {
  const roles = Object.values(COLORBLIND_ROLES);
  const worst = closest(roles);
  assert.ok(worst.d >= MIN_DELTA_E, `roles: ${JSON.stringify(worst)}`);
  // sentence B's line and the selected token's mark against each other, and against the ramp's darkest end and
  // white (they are drawn over the cells)
  const { boundary, selected } = PALETTES.colorblind;
  const marks = closest([boundary, selected, CIVIDIS_STOPS.at(-1), "#ffffff"]);
  assert.ok(marks.d >= MIN_DELTA_E, `marks: ${JSON.stringify(marks)}`);
});

/** The closest pair of a set of marks drawn on white, each { color, dash }: marks with different dashes are told
 * apart by the dash, so only those that share one must differ in colour; and no two marks may be the same. */
function closestByDash(marks) {
  const keys = marks.map((m) => `${m.color}|${m.dash.join(",")}`);
  assert.equal(new Set(keys).size, marks.length, `two marks alike: ${keys}`);
  const groups = new Map();
  for (const m of marks) groups.set(m.dash.join(","), [...(groups.get(m.dash.join(",")) || []), m]);
  return [...groups.values()].map((g) => closest(["#ffffff", ...g.map((m) => m.color)]))
    .reduce((a, b) => (b.d < a.d ? b : a));
}

test("the all-heads lines of BERT-base's 12 heads stay apart in the colour-blind palette (by colour or by dash)", () => {
  for (const theme of ["default", "projector"]) {
    const styles = Array.from({ length: 12 }, (_, head) => headStyle(head, themeOf(theme, "colorblind")));
    const worst = closestByDash(styles);
    assert.ok(worst.d >= MIN_DELTA_E, `${theme}: ${JSON.stringify(worst)}`);
  }
});

test("the corpus maps' categories, queries and keys, right and wrong stay apart on white in the colour-blind palette",
  () => {
    const c = categoryColors(PALETTES.colorblind);
    for (const [name, set] of Object.entries({ categories: [...c.colors, c.other], kinds: c.kinds,
      errors: [c.right, c.wrong, c.other] })) {
      const worst = closest(["#ffffff", ...set]);
      assert.ok(worst.d >= MIN_DELTA_E, `${name}: ${JSON.stringify(worst)}`);
    }
  });

test("the probe chart's four lines differ by dash, and by colour on white in every vision, whatever the palette", () => {
  assert.equal(new Set(SERIES.map((s) => s.dash.join(","))).size, SERIES.length);
  const worst = closest(["#ffffff", ...SERIES.map((s) => s.color)]);
  assert.ok(worst.d >= MIN_DELTA_E, JSON.stringify(worst));
});

test("the default palette fails the same measure, which is why the colour-blind one exists", () => {
  const roles = closest(Object.values(ROLE_COLORS));
  assert.ok(roles.d < 5 && roles.vision !== "normal", JSON.stringify(roles));
  assert.ok(closest([BOUNDARY_COLOR, SELECTED_COLOR]).d < MIN_DELTA_E);
});

test("the cividis ramp's lightness rises steadily in every vision (no step back a reader could misread)", () => {
  for (const m of Object.values(VISIONS)) {
    const L = CIVIDIS_STOPS.map((c) => lab(simulate(hexLinear(c), m))[0]);
    for (let k = 1; k < L.length; k++) assert.ok(L[k] < L[k - 1] - 2, `${L.map((v) => v.toFixed(1))}`);
  }
});
