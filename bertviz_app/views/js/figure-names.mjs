// The app's plotly figures, named for screen readers: a figure's SVG is a picture (role img) whose name is its
// title and its axes' titles, read from the figure's own layout (figures/ builds the titles from the numbers, in the
// page's language), the words around them in the page's language too.
import { t } from "./i18n.mjs";

/** "Title; x axis: ...; y axis: ..." from a plotly layout (title and axis titles as strings or { text }). */
export function figureName(layout) {
  const text = (t) => (typeof t === "string" ? t : t?.text || "").replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  const parts = [text(layout?.title)];
  for (const [key, axis] of Object.entries(layout || {})) {
    const m = /^([xy])axis\d*$/.exec(key);
    if (m && text(axis?.title)) parts.push(t("{axis} axis: {title}", { axis: m[1], title: text(axis.title) }));
  }
  return parts.filter(Boolean).join("; ");
}

/** Name every plotly figure of the page now and whenever one is drawn or drawn again (a MutationObserver). */
export function nameFigures(doc = document) {
  const name = () => {
    for (const gd of doc.querySelectorAll(".js-plotly-plot")) {
      const svg = gd.querySelector("svg.main-svg");
      const label = figureName(gd.layout);
      if (!svg || !label || svg.getAttribute("aria-label") === label) continue;
      svg.setAttribute("role", "img");
      svg.setAttribute("aria-label", label);
    }
  };
  let queued = false;
  const observer = new MutationObserver(() => {
    if (queued) return;
    queued = true;
    setTimeout(() => { queued = false; name(); }, 200);
  });
  observer.observe(doc.body, { childList: true, subtree: true });
  name();
  return observer;
}
