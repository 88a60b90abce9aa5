// palette.mjs: the colour-blind palette's categorical colours stay apart in normal vision and under protanopia,
// deuteranopia and tritanopia, simulated with Machado, Oliveira & Fernandes 2009's matrices (severity 1.0, applied
// to linear sRGB), by the CIEDE2000 difference in CIELAB (D65). The threshold, MIN_DELTA_E = 20: 1 is a difference
// just seen side by side, about 10 one seen at a glance; the colours here are small tiles and legend swatches apart
// from each other, so they get twice that. The default palette is measured too, to show why the choice exists.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MACHADO, VISIONS, ciede2000, closest, closestByDash, hexLinear, lab, simulate } from "./colour.mjs";

import { COLORBLIND_ROLES, CIVIDIS_STOPS, MIN_DELTA_E, PALETTES, restorePalette }
  from "../../bertviz_app/views/js/palette.mjs";
import { setLanguage } from "../../bertviz_app/views/js/i18n.mjs";
import { SELECTED_COLOR, BOUNDARY_COLOR, headStyle } from "../../bertviz_app/views/js/scale.mjs";
import { themeOf } from "../../bertviz_app/views/js/theme.mjs";
import { ROLE_COLORS } from "../../bertviz_app/views/js/timeline.mjs";
import { categoryColors } from "../../bertviz_app/views/js/corpus-data.mjs";
import { SERIES } from "../../bertviz_app/views/js/corpus-cards.mjs";

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

test("the default all-heads lines: twelve hues apart in normal vision, not in a deficiency (why the switch exists)",
  () => {
    const heads = ["#ffffff", ...Array.from({ length: 12 }, (_, head) => headStyle(head, themeOf("default")).color)];
    const worst = Object.fromEntries(Object.entries(VISIONS).map(([vision, m]) => {
      const seen = heads.map((c) => lab(simulate(hexLinear(c), m)));
      return [vision, Math.min(...seen.flatMap((a, i) => seen.slice(i + 1).map((b) => ciede2000(a, b))))];
    }));
    // docs/accessibility.md's figures: 14.3 in normal vision, 2.5 under protanopia (heads 0 and 4)
    assert.ok(worst.normal > 14, JSON.stringify(worst));
    assert.ok(worst.protanopia < 3 && worst.deuteranopia < 3 && worst.tritanopia < MIN_DELTA_E, JSON.stringify(worst));
  });

test("the switch says why the default keeps its twelve hues, in the page's language", () => {
  const attributes = {};
  const button = { setAttribute: (name, value) => { attributes[name] = value; } };
  const doc = { body: { classList: { toggle() {} } }, defaultView: null };
  try {
    for (const [lang, words] of [["en", "each of 12 heads"], ["es", "cada una de las 12 cabezas"]]) {
      setLanguage(lang);
      restorePalette(doc, button, { getItem: () => null });
      assert.equal(attributes["aria-pressed"], "false");
      assert.ok(attributes.title.includes(words), attributes.title);
    }
  } finally {
    setLanguage("en");
  }
});

test("the cividis ramp's lightness rises steadily in every vision (no step back a reader could misread)", () => {
  for (const m of Object.values(VISIONS)) {
    const L = CIVIDIS_STOPS.map((c) => lab(simulate(hexLinear(c), m))[0]);
    for (let k = 1; k < L.length; k++) assert.ok(L[k] < L[k - 1] - 2, `${L.map((v) => v.toFixed(1))}`);
  }
});
