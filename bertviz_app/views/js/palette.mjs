// The colour-blind-safe palette, a choice beside the theme (theme.mjs): it changes colours only, so it goes with the
// default and the projector theme alike. Ramps from cividis (Nuñez et al. 2018: lightness rises monotonically and
// its hues stay apart under red-green and blue-yellow deficiency), reversed so that nothing is white as elsewhere; the
// categorical colours (heads' roles; where sentence B starts; the selected token) chosen so that every pair stays
// at least MIN_DELTA_E apart (CIEDE2000) in normal vision and under protanopia, deuteranopia and tritanopia
// simulated with Machado et al. 2009's matrices (tests/js/palette.test.mjs measures it). Nothing is told by colour
// alone: sentence B's start is a dashed line, a role is named in the tooltips and the tables, a selection is bold.
// A host switches it with a class on its page (COLORBLIND_CLASS, whose CSS sets --bv-palette) and remembers it.

import { HEADS } from "./heads.mjs";
import { t } from "./i18n.mjs";

export const MIN_DELTA_E = 20;

export const CIVIDIS_STOPS = ["#ffffff", "#fee838", "#dec958", "#bcae6c", "#9b9476", "#7d7c78", "#61656f", "#434e6c",
  "#1a386f", "#00224e"];

// The roles' colours in this palette live with the heads' vocabulary (heads.py, generated into heads.mjs).
export const COLORBLIND_ROLES = HEADS.roleColorsColorblind;

// "All heads" draws a layer's heads at once. No twelve colours stay MIN_DELTA_E apart in all four visions (a search
// found none past 19 with white among them), so four that do (Okabe & Ito's orange and sky blue, black, Tol's
// purple) go with three dashes: heads 0-3 solid, 4-7 dashed, 8-11 dotted; the key draws each head's line and number.
// Dashes are in line widths (the projector's lines are wider), drawn with round caps: a dot is a dash of ~0.
export const HEAD_MARKS = { colors: ["#E69F00", "#56B4E9", "#000000", "#AA3377"], dashes: [[], [3, 3], [0.01, 2.5]] };

// The corpus maps' categories: five colours and grey for "other" (the rest of a tag set goes there; the legend's
// buttons show one category alone, which is how a reader tells any two apart without colour). The roles' own.
export const CATEGORIES = { colors: ["#E69F00", "#56B4E9", "#117733", "#332288", "#000000"], other: "#8c8c8c",
  kinds: ["#0072B2", "#D55E00"], right: "#0072B2", wrong: "#D55E00" };

export const PALETTES = {
  default: { palette: "default" },
  colorblind: { palette: "colorblind", stops: CIVIDIS_STOPS, roles: COLORBLIND_ROLES, boundary: "#0072B2",
    selected: "#D55E00", headMarks: HEAD_MARKS, categories: CATEGORIES },
};

export const COLORBLIND_CLASS = "bv-colorblind";
export const PALETTE_KEY = "bertviz-palette";

/** The palette of a name (the CSS variable's value, a stored word); anything else is the default. */
export function paletteOf(name) {
  const key = typeof name === "string" ? name.trim() : "";
  return Object.hasOwn(PALETTES, key) ? PALETTES[key] : PALETTES.default;
}

/** The page's palette on or off, remembered; the views lay themselves out again (they listen to resize). */
export function setPalette(doc, on, storage = doc.defaultView?.localStorage) {
  doc.body.classList.toggle(COLORBLIND_CLASS, on);
  try { storage?.setItem(PALETTE_KEY, on ? "colorblind" : "default"); } catch { /* private mode: not remembered */ }
  doc.defaultView?.dispatchEvent(new Event("resize"));
  return on;
}

/** At a host's start: the palette this browser chose last, on the page and its button. The button says why the
 * default is not this palette: its all-heads lines give each of twelve heads a hue of its own, which no twelve
 * colours can do in every vision (docs/accessibility.md: the best a search found is 18 apart). */
export function restorePalette(doc, button, storage = doc.defaultView?.localStorage) {
  let on = false;
  try { on = paletteOf(storage?.getItem(PALETTE_KEY)).palette === "colorblind"; } catch { on = false; }
  doc.body.classList.toggle(COLORBLIND_CLASS, on);
  if (on) doc.defaultView?.dispatchEvent(new Event("resize"));
  button?.setAttribute("aria-pressed", String(on));
  button?.setAttribute("title", t("Colours told apart in every common colour-vision deficiency, heads by colour and "
    + "dash. The default keeps a colour of its own for each of 12 heads, which no 12 colours can do for every eye."));
  return on;
}

/** A host's palette button pressed: the other palette, remembered. */
export function togglePalette(doc, button, storage = doc.defaultView?.localStorage) {
  const on = setPalette(doc, !doc.body.classList.contains(COLORBLIND_CLASS), storage);
  button?.setAttribute("aria-pressed", String(on));
  return on;
}

/** The heads' role colours on this page now (the timeline's picture and key follow the palette). */
export function roleColors(doc, defaults) {
  return doc?.body?.classList.contains(COLORBLIND_CLASS) ? COLORBLIND_ROLES : defaults;
}
