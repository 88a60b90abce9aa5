// The offline page (bertviz_app.views.standalone_html) as text: what it opens on. "Save page" writes the view on
// screen, so the saved page must open there too, not at its own first view.

/** The parts of the selection a saved page keeps; the heads picked to silence need a server, so they stay. */
export const SAVED_KEYS = ["view", "layer", "head", "token", "direction", "matrix", "units", "segments",
  "hideSpecial", "renormalize", "scale", "zoom", "expand"];

// Matched at the start of a line, as standalone_html writes them: the page's own script (this module, inlined)
// holds the same words inside a line.
const OPTIONS = /^<script type="application\/json" id="bertviz-options">(.*)<\/script>\n/m;
const ROOT = /^<div id="bertviz-root">/m;

/** The options a page carries in its bertviz-options element ({} when it has none or they do not parse). */
export function pageOptions(html) {
  const found = OPTIONS.exec(html);
  if (!found) return {};
  try {
    const value = JSON.parse(found[1]);
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}

/** The page with its options' selection set to `state` (its SAVED_KEYS), so that it opens on that view. */
export function withSelection(html, state) {
  if (!ROOT.test(html)) throw new Error("this is not a page of the attention views (it has no bertviz-root)");
  const options = pageOptions(html);
  options.selection = Object.fromEntries(SAVED_KEYS.filter((k) => state[k] !== undefined).map((k) => [k, state[k]]));
  // Inside <script>, "</script" would end the element: JSON's \u003c spells "<" without it.
  const element = `<script type="application/json" id="bertviz-options">${JSON.stringify(options)
    .replace(/</g, "\\u003c")}</script>\n`;
  return html.replace(OPTIONS, "").replace(ROOT, (root) => `${element}${root}`);
}
