// A theme: the style values the views' pure layout and paint functions read (size.theme), so that a node test can
// lay out and paint a view in either. The projector theme is for a classroom projector, which washes out pale
// colors and thin lines: larger labels, wider and never faint lines, a ramp that leaves white sooner and ends darker.
// A host switches it with a class on its page (PROJECTOR_CLASS, whose CSS sets --bv-theme, read by the mount shell)
// and remembers it in the browser's storage; setTheme and storedTheme are the only code that touches either.

import { paletteOf } from "./palette.mjs";
import { ATTENTION_STOPS, makeLUT } from "./scale.mjs";

// No step a projector turns white: the first above nothing is already a mid blue, the last near black.
export const PROJECTOR_STOPS = ["#ffffff", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b",
  "#06214a", "#03112a"];

export const THEMES = {
  default: { name: "default", labelMin: 15, labelMax: 15, lineWidth: 2, activeLineWidth: 2.5, alphaFloor: 0.1,
    stops: ATTENTION_STOPS, axisPx: 14, tagPx: 12, special: "#6b6b6b" },
  projector: { name: "projector", labelMin: 17, labelMax: 26, lineWidth: 3.5, activeLineWidth: 4, alphaFloor: 0.3,
    stops: PROJECTOR_STOPS, axisPx: 18, tagPx: 14, special: "#444444" },
};

export const PROJECTOR_CLASS = "bv-projector";
export const STORAGE_KEY = "bertviz-theme";

/** The theme of a name (a CSS variable's value, a stored word); anything else is the default. With a palette
 * (palette.mjs, a name as well), the theme's colours are the palette's and its name says both. */
export function themeOf(name, palette) {
  const key = typeof name === "string" ? name.trim() : "";
  const theme = Object.hasOwn(THEMES, key) ? THEMES[key] : THEMES.default;
  const colors = paletteOf(palette);
  return colors.palette === "default" ? theme : { ...theme, ...colors, name: `${theme.name}+${colors.palette}` };
}

const luts = new Map();
/** The color table of a theme's attention ramp, made once per theme. */
export function attentionLUT(theme = THEMES.default) {
  if (!luts.has(theme.name)) luts.set(theme.name, makeLUT(theme.stops));
  return luts.get(theme.name);
}

/** The largest label type a layout grows to: the host's (presenter mode's --bv-label-max) or the theme's. */
export function largestLabel(size) {
  const theme = size.theme || THEMES.default;
  return Math.max(size.labelMax ?? theme.labelMax, theme.labelMax);
}

/** The theme the visitor chose last in this browser ("default" when none, or storage is refused). */
export function storedTheme(storage) {
  try { return themeOf(storage?.getItem(STORAGE_KEY)).name; } catch { return "default"; }
}

/**
 * Switch the page's theme (on: the projector's), remember it, and let the views lay themselves out again: they
 * listen to the window's resize, as for presenter mode. Returns whether the projector theme is on.
 */
export function setTheme(doc, on, storage = doc.defaultView?.localStorage) {
  doc.body.classList.toggle(PROJECTOR_CLASS, on);
  try { storage?.setItem(STORAGE_KEY, on ? "projector" : "default"); } catch { /* private mode: not remembered */ }
  doc.defaultView?.dispatchEvent(new Event("resize"));
  return on;
}

/** A host's theme button shows its state as pressed or not; its words stay, so the title row keeps its width. */
function markButton(button, on) {
  if (button) button.setAttribute("aria-pressed", String(on));
}

/** At a host's start: the theme this browser remembers, put on the page and its button. */
export function restoreTheme(doc, button, storage = doc.defaultView?.localStorage) {
  const on = storedTheme(storage) === "projector";
  doc.body.classList.toggle(PROJECTOR_CLASS, on);
  if (on) doc.defaultView?.dispatchEvent(new Event("resize"));
  markButton(button, on);
  return on;
}

/** A host's theme button pressed: the other theme, remembered. */
export function toggleTheme(doc, button, storage = doc.defaultView?.localStorage) {
  const on = setTheme(doc, !doc.body.classList.contains(PROJECTOR_CLASS), storage);
  markButton(button, on);
  return on;
}
