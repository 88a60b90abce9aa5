// The page's language: every string a visitor reads goes through t(english), which gives it in the language chosen
// once for the page (chooseLanguage: ?lang= in the address, else the browser's languages, else English). The
// catalogue is catalog-es.mjs, keyed by the English string itself (gettext's habit: English needs no catalogue, and
// a string missing from it shows in English rather than as a key). Placeholders are {name}, filled after the lookup,
// so that a translation may move them. Token text, model outputs and what a visitor typed never go through t().

import { ES } from "./catalog-es.mjs";

const CATALOGUES = { es: ES };
/** The languages a page can be in; "en" is the source language. */
export const LANGUAGES = ["en", ...Object.keys(CATALOGUES)];

let current = "en";
const misses = new Set(); // strings asked for in another language that its catalogue lacks (shown in English)

/** The language `?lang=` names in `search` when it is one of LANGUAGES, else the first of `preferred` (the browser's
 * navigator.languages, "es-ES" read as "es") that is, else "en". */
export function chooseLanguage(search = "", preferred = []) {
  const asked = new URLSearchParams(search).get("lang");
  const known = (tag) => {
    const primary = String(tag || "").toLowerCase().split("-")[0];
    return LANGUAGES.includes(primary) ? primary : null;
  };
  if (known(asked)) return known(asked);
  for (const tag of preferred || []) if (known(tag)) return known(tag);
  return "en";
}

/** The page's language (set once by the host with setLanguage; "en" until then). */
export function language() {
  return current;
}

/** Make `lang` the page's language (anything not in LANGUAGES: English). Returns it. */
export function setLanguage(lang) {
  current = LANGUAGES.includes(lang) ? lang : "en";
  return current;
}

/** `english` in the page's language (or in `lang`), its {name} placeholders filled from `values`. */
export function t(english, values = null, lang = current) {
  const known = CATALOGUES[lang]?.[english];
  if (lang !== "en" && known === undefined && misses.size < 1000) misses.add(english);
  const text = known ?? english;
  if (!values) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** The strings asked for in another language than English that its catalogue lacks, so far (tests and
 * translators read them: tests/test_i18n_browser.py). */
export function missing() {
  return [...misses];
}

/** The placeholders of a catalogue string, sorted: what a translation must keep. */
export function placeholders(text) {
  return [...String(text).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
}

const ATTRIBUTES = ["title", "aria-label", "placeholder", "alt"];

/** Put a page written in English (the static page's template) into the page's language: each text node and title,
 * aria-label, placeholder or alt attribute under `root` that is a catalogue string, whole (spaces around kept).
 * Input values and the views' drawings are not touched: they are the visitor's text and the model's tokens. */
export function translateTree(root, lang = current) {
  if (lang === "en" || !root) return;
  const doc = root.ownerDocument || root;
  const walker = doc.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
  const swap = (text) => { // whitespace inside a string is the markup's layout, not the string's
    const core = text.trim();
    const known = CATALOGUES[lang][core.replace(/\s+/g, " ")];
    // null also where the translation is the same word ("Tokens"): writing it again would be a change to observe
    return core && known && known !== core ? text.replace(core, known) : null;
  };
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement?.closest("script, style, textarea, .bv-view")) continue;
    const out = swap(node.nodeValue);
    if (out !== null) node.nodeValue = out;
  }
  for (const el of root.querySelectorAll?.(ATTRIBUTES.map((a) => `[${a}]`).join(", ")) || []) {
    for (const name of ATTRIBUTES) {
      const out = el.hasAttribute(name) ? swap(el.getAttribute(name)) : null;
      if (out !== null) el.setAttribute(name, out);
    }
  }
}

/** `object[field]` in the page's language: a lesson's title, a step's caption or question are written in the file
 * itself, in English, with { "translations": { "es": { "caption": "..." } } } beside them (bertviz_app/lessons.py);
 * a translation the file lacks is the English. */
export function translated(object, field, lang = current) {
  const value = object?.translations?.[lang]?.[field];
  return typeof value === "string" && value ? value : object?.[field];
}
