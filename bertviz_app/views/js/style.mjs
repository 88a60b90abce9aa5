// The views' CSS, every rule under .bv-root so a host page's styles and ours leave each other alone. It lives in
// the bundle (not a separate file) so that one script is all a host has to carry.

import { ACCESS_CSS } from "./access-style.mjs";

export const CSS = `
.bv-root { font: 16px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: #111;
  background: #fff; max-width: 100%; min-width: 0; box-sizing: border-box; }
.bv-root *, .bv-root *::before, .bv-root *::after { box-sizing: border-box; }
.bv-root .bv-title { margin: 0 0 2px; font-size: 18px; font-weight: 600; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.bv-root .bv-subtitle { margin: 0 0 8px; color: #555; font-size: 14px; overflow-wrap: anywhere; }
.bv-root .bv-controls { display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center; margin: 0 0 8px; }
.bv-root .bv-field { display: inline-flex; align-items: center; gap: 6px; min-width: 0; max-width: 100%;
  white-space: nowrap; }
.bv-root .bv-field > span { color: #333; }
.bv-root input[type=range] { width: 150px; min-width: 80px; accent-color: #2171b5; }
.bv-root select { font: inherit; font-size: 15px; padding: 3px 4px; max-width: 100%; min-width: 0;
  appearance: auto; -webkit-appearance: menulist; background-image: none; color: #111; background-color: #fff;
  border: 1px solid #8c959f; border-radius: 4px; width: auto; height: auto; } /* a host's select styles stay out */
.bv-root #view-token, .bv-root [id$=view-token] { max-width: 200px; }
.bv-root output { display: inline-block; min-width: 2ch; font-weight: 600; font-variant-numeric: tabular-nums; }
.bv-root input[type=checkbox] { width: 18px; height: 18px; margin: 0; accent-color: #2171b5; }
.bv-root .bv-bar { display: flex; flex-wrap: wrap; align-items: end; gap: 6px 12px; margin: 4px 0 8px;
  border-bottom: 2px solid #d0d7de; }
.bv-root .bv-tabs { display: flex; flex-wrap: wrap; gap: 2px; }
.bv-root .bv-tabs button { font: inherit; font-size: 16px; padding: 7px 14px; border: 1px solid #d0d7de;
  border-bottom: none; border-radius: 6px 6px 0 0; background: #f3f5f7; color: #222; cursor: pointer;
  margin-bottom: -2px; }
.bv-root .bv-tabs button[aria-selected=true] { background: #fff; border-color: #2171b5; border-bottom: 2px solid #fff;
  font-weight: 600; color: #08306b; }
.bv-root .bv-exports { display: flex; flex-wrap: wrap; gap: 6px; margin-left: auto; padding-bottom: 4px; }
.bv-root button { font: inherit; font-size: 14px; line-height: 1.3; width: auto; min-width: 0; box-shadow: none; }
.bv-root .bv-tools { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 0 0 6px; }
.bv-root .bv-exports button, .bv-root .bv-notice button, .bv-root .bv-toggle, .bv-root .bv-tools button {
  padding: 4px 10px; border: 1px solid #aab4be; border-radius: 5px; background: #fff; color: #111;
  cursor: pointer; }
.bv-root .bv-toggle[aria-pressed=true] { background: #e3eef9; border-color: #2171b5; }
.bv-root .bv-pick[aria-pressed=true] { border-color: #08306b; box-shadow: inset 0 0 0 1px #08306b; }
.bv-root .bv-pick[aria-pressed=true]::before { content: "\\2713\\00a0"; font-weight: 700; }
.bv-root .bv-tools .bv-primary { background: #2171b5; border-color: #2171b5; color: #fff; font-weight: 600; }
.bv-root .bv-tools button:disabled { background: #f3f5f7; border-color: #d0d7de; color: #6e7781; cursor: default; }
.bv-root .bv-tools [role=status]:empty { display: none; }
.bv-root button:focus-visible, .bv-root .bv-scroller:focus-visible, .bv-root select:focus-visible,
.bv-root input:focus-visible { outline: 3px solid #ff7f0e; outline-offset: 1px; }
.bv-root .bv-view { position: relative; min-width: 0; }
.bv-root .bv-surface { position: relative; width: 100%; overflow: hidden; border: 1px solid #e1e4e8;
  border-radius: 4px; background: #fff; }
.bv-root .bv-canvas { position: absolute; left: 0; top: 0; pointer-events: none; }
.bv-root .bv-scroller { position: absolute; inset: 0; overflow: auto; }
.bv-root .bv-spacer { pointer-events: none; }
.bv-root .bv-caption { margin: 6px 0 0; color: #333; font-size: 15px; max-width: 72em; }
.bv-root .bv-view.bv-beside { display: grid; grid-template-columns: minmax(0, 1fr) 300px; column-gap: 16px;
  align-items: start; }
.bv-root .bv-beside > .bv-surface { grid-column: 1; grid-row: 1; }
.bv-root .bv-beside > .bv-caption { grid-column: 2; grid-row: 1; margin: 0; font-size: 14px; }
.bv-root .bv-note { margin: 6px 0 0; color: #111; font-size: 15px; font-weight: 600; max-width: 72em; }
.bv-root .bv-overview .bv-error { margin: 0 0 6px; }
.bv-root .bv-stats { display: flex; flex-direction: column; gap: 2px; margin: 0 0 6px; font-size: 15px;
  min-height: 4.2em; overflow-wrap: anywhere; }
.bv-root .bv-muted { color: #555; font-size: 14px; }
.bv-root .bv-notice { margin: 0 0 8px; padding: 8px 12px; background: #fff8e6; border: 1px solid #e8c66a;
  border-radius: 4px; }
.bv-root .bv-notice p { margin: 0 0 6px; }
.bv-root .bv-tooltip { position: absolute; z-index: 5; pointer-events: none; max-width: min(420px, 90%);
  padding: 6px 9px; background: rgba(20, 24, 28, 0.92); color: #fff; border-radius: 5px; font-size: 14px; }
.bv-root .bv-tip-title { font-weight: 600; overflow-wrap: anywhere; }
.bv-root .bv-finder { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 8px; margin: 0 0 8px;
  font-size: 15px; }
.bv-root .bv-finder-title { font-weight: 600; overflow-wrap: anywhere; }
.bv-root .bv-finder-list { display: flex; flex-wrap: wrap; gap: 4px 6px; }
.bv-root .bv-finder-list button { padding: 3px 8px; border: 1px solid #aab4be; border-radius: 5px; background: #fff;
  color: #111; cursor: pointer; overflow-wrap: anywhere; text-align: left; }
.bv-root .bv-finder-list button[aria-pressed=true] { background: #e3eef9; border-color: #2171b5; }
.bv-root .bv-more { flex-basis: 100%; }
.bv-root .bv-more > summary { display: none; }
.bv-root .bv-more > .bv-controls { margin: 0; }
@media (max-width: 699px) {
  .bv-root .bv-more > summary { display: list-item; cursor: pointer; color: #08306b; font-weight: 600; }
  .bv-root .bv-more > .bv-controls { margin-top: 6px; }
  .bv-root .bv-tabs button { padding: 6px 9px; font-size: 15px; }
  .bv-root input[type=range] { width: 120px; }
  .bv-root .bv-finder-list .bv-finder-head, .bv-root .bv-finder-list .bv-finder-to { display: block; }
  .bv-root .bv-finder-list button { padding: 2px 6px; font-size: 14px; }
}
/* The projector theme (theme.mjs): the views read --bv-theme for their drawing; the text around it goes black. */
.bv-projector .bv-root { --bv-theme: projector; }
.bv-projector .bv-root .bv-subtitle, .bv-projector .bv-root .bv-caption, .bv-projector .bv-root .bv-muted,
.bv-projector .bv-root .bv-field > span { color: #000; }
.bv-projector .bv-root .bv-surface { border-color: #6e7781; }
/* The timeline slider (timeline-bar.mjs): slider and predictions, the picture of roles beside them. */
.bv-root .bv-timeline { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: flex-start; margin: 0 0 10px;
  padding: 8px 10px; border: 1px solid #d0d7de; border-radius: 6px; background: #f8fafc; }
.bv-root .bv-timeline-main { flex: 1 1 360px; min-width: 0; }
.bv-root .bv-timeline-row { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px; }
.bv-root .bv-timeline-row input[type=range] { flex: 1 1 140px; width: auto; }
.bv-root .bv-timeline-input { margin: 0 0 4px; font-weight: 600; overflow-wrap: anywhere; }
/* the step and loss, and the picture of roles beside, have widths of their own: sized by their text, they moved the
   slider and the picture sideways while scrubbing (the slider's end at x 400 at step 0, 515 at step 114) */
.bv-root .bv-timeline-at { flex: 0 0 32ch; max-width: 100%; overflow-wrap: anywhere;
  font-variant-numeric: tabular-nums; }
.bv-root .bv-timeline-prediction { margin-top: 4px; font-size: 15px; overflow-wrap: anywhere; }
.bv-root .bv-timeline-side { flex: 0 0 300px; min-width: 0; max-width: 100%; }
.bv-root .bv-timeline-roles { display: block; cursor: pointer; max-width: 100%; }
.bv-root .bv-timeline-heads { margin: 4px 0 0; font-size: 14px; }
.bv-root .bv-timeline-key { margin: 2px 0 0; font-size: 12px; color: #444; display: flex; flex-wrap: wrap;
  gap: 2px 8px; max-width: 300px; }
.bv-root .bv-timeline-key i { display: inline-block; width: 10px; height: 10px; margin-right: 3px;
  border: 1px solid #999; vertical-align: -1px; }
.bv-root .bv-error { padding: 10px; border: 1px solid #d62728; color: #8b1a1a; }
.bv-root .bv-link-note { margin: 0 0 6px; color: #a50f15; font-size: 14px; overflow-wrap: anywhere; }
.bv-root [hidden] { display: none !important; }
`;

/** Put the CSS into the document (or shadow root) once. */
export function injectStyle(doc) {
  const host = doc.head || doc;
  if (host.querySelector && host.querySelector("style[data-bertviz-views]")) return;
  const style = (doc.ownerDocument || doc).createElement("style");
  style.setAttribute("data-bertviz-views", "");
  style.textContent = CSS + ACCESS_CSS;
  host.append(style);
}
