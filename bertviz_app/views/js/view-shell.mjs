// The one mount shell every view runs in. A view module is pure functions (the CircuitsVis habit: data and
// selection in, picture out):
//
//   layout(data, state, size) -> layout   what to draw where, for a selection state in a box; no DOM.
//       data = { payload, cache, silence }   cache memoizes per payload (createCache); silence: a host offers it
//       size = { width, maxHeight, measure(font, text) -> px, labelMax: the largest label type in px, when a host
//       asks labels to grow with their rows (CSS --bv-label-max), fillWidth: the host asks a picture to take the
//       box's whole width (CSS --bv-fill-width: 1), theme: theme.mjs's style values (CSS --bv-theme) }
//       The layout carries width, height (the whole picture), boxHeight (the part on screen), caption, drawn (a
//       string a test waits for), geometry (where rows and cells are, for automation) and `locked`: the target the
//       selection keeps (the selected token), or null. hidden: true leaves the picture out (nothing to draw yet).
//   paint(ctx, layout, viewport, focus, image) -> { labels }   onto a canvas context or the SVG recorder.
//       viewport = { x, y, width, height, dpr }: the visible part, in picture pixels
//       focus = { hover, locked, active, ui }: active is hover-or-locked, decided here once for every view
//       image(pixels) -> something drawImage takes, for { width, height, data } bitmaps the layout built
//   hit(layout, x, y, viewport) -> target | null   what is under picture point (x, y); viewport tells the sticky
//       bands (labels that stay at the box's edge) from the scrolled part. A target with hover: false (a button
//       in the picture) is clicked but never hovered.
//   click(layout, target, state, { ui, env }) -> { patch } (a selection change) | { lock } (kept by the view) | null
//   keyTarget(layout, i) -> the target of row i (the keyboard's cursor, keys.mjs), keyRows(layout) -> how many;
//   OWN_KEYS: the view wires its own keys (All heads) and the shell's stay off
//   tooltip(layout, target) -> lines | null;  reveal(layout, before) -> { x, y } | null: where to scroll on a
//   new layout;  fileName(layout);  NAME, LABEL, BITMAP (the SVG export says cells are a bitmap)
//   extras(root, shell) -> { before, after, refresh(layout, state, focus), reserve() }   optional DOM of a view
//       beyond its picture (the overview's silence tools, the query/key view's notice); reserve(): pixels of it
//       that the box gives up, so that the caption stays on the screen.
//
// The shell owns the DOM around them: the scrolling surface, subscription to the selection (redrawing once per
// frame, only while the view is shown), hover and a view's own lock, the tooltip, resizing and teardown.

import { createCache } from "./data.mjs";
import { t } from "./i18n.mjs";
import { bitmapCanvases, createSurface, createTooltip, el, everyFrame, measureText } from "./dom.mjs";
import { pictureKey } from "./keys.mjs";
import { themeOf } from "./theme.mjs";

/** Hover-or-locked: what a view highlights. The pointer wins; without it, what was clicked. */
export function activeTarget(hover, locked) {
  return hover ?? locked ?? null;
}

/** A view's own lock (a clicked key row) holds only while the layout it was made in shows the same thing. */
export function currentLock(lock, layout) {
  return lock && layout && lock.scope === layout.lockScope ? lock.target : null;
}

/**
 * mountView(container, view, { payload, selection, env }) -> { name, scene(), refresh(), destroy() }
 * env: { maxHeight({ beside }) -> px (beside: the caption is beside the picture, not under it),
 *   detailView() -> "lines" | "matrix", onSilence, loadQueryKey, idPrefix }
 */
/** image(pixels): one canvas per bitmap a layout built, drawn once (the layout's cache keeps the bitmap alive). */
// A wide box puts the caption beside the picture, not under it: at 1280 x 720 a Matrix of 16 tokens leaves ~800 px
// empty on the right while the caption's lines below took the rows' height. Views with DOM of their own (extras)
// keep it under the picture.
const BESIDE_MIN_WIDTH = 960;
const CAPTION_WIDTH = 300; // and views.css: .bv-beside
const CAPTION_GAP = 16;
const BOX_BORDER = 2; // views.css: .bv-surface's border, top and bottom (left and right), that the picture is inside

/**
 * The layout on screen and where its caption goes: beside the picture (which gives it that width) only where the box
 * is wide and that brings every row into the box, else under it. sizeFor(beside) -> the size a layout gets.
 */
export function placeCaption(view, data, state, sizeFor, wide) {
  const under = view.layout(data, state, sizeFor(false));
  if (!wide || under.hidden || under.height <= under.boxHeight) return { layout: under, beside: false };
  const beside = view.layout(data, state, sizeFor(true));
  return beside.height <= beside.boxHeight ? { layout: beside, beside: true } : { layout: under, beside: false };
}

/**
 * The layout an export draws: the chosen layer, head and filters with every label, whatever the box scrolls to or
 * how small "fit the box" makes the rows: of the zoom on screen and "every label", the one with the larger picture.
 */
export function exportLayout(view, data, state, size) {
  const chosen = view.layout(data, state, size);
  if (chosen.hidden || state.zoom === "labels") return chosen;
  const labeled = view.layout(data, { ...state, zoom: "labels" }, size);
  return labeled.width * labeled.height > chosen.width * chosen.height ? labeled : chosen;
}

/** A scene for the exports (export.mjs): the whole of a layout, painted at twice the pixels with a focus. */
export function exportScene(view, layout, focus, image) {
  const v = { x: 0, y: 0, width: layout.width, height: layout.height, dpr: 2 };
  return { width: v.width, height: v.height, paint: (ctx) => view.paint(ctx, layout, v, focus, image),
    bitmap: Boolean(view.BITMAP), name: view.fileName ? view.fileName(layout) : view.NAME };
}

export function mountView(container, view, { payload, selection, env = {} }) {
  const root = el("div", { class: `bv-view bv-${view.NAME}` });
  container.append(root);
  const data = { payload, cache: createCache(), silence: typeof env.onSilence === "function" };
  const ui = {}; // a view's interaction state beyond hover (the overview's keyboard cursor, picking mode)
  let layout = null;
  let hover = null;
  let lock = null;
  let dirty = true; // the selection changed while the view was hidden

  const focus = () => {
    const locked = currentLock(lock, layout) ?? layout?.locked ?? null;
    return { hover, locked, active: activeTarget(hover, locked), ui };
  };
  const image = bitmapCanvases();
  const dpr = () => window.devicePixelRatio || 1;
  // The host's wish for larger type (presenter mode sets it in CSS): labels grow up to it when the rows have room.
  const labelMax = () => parseFloat(getComputedStyle(root).getPropertyValue("--bv-label-max")) || undefined;
  // The host's theme and palette (its switches set --bv-theme, --bv-palette in CSS), read with every layout.
  const theme = () => themeOf(...["--bv-theme", "--bv-palette"].map((v) => getComputedStyle(root).getPropertyValue(v)));

  const shell = {
    root, ui, selection, payload, env,
    layout: () => layout,
    focus,
    redraw: () => { surface.redraw(); extra?.refresh?.(layout, selection.get(), focus()); },
    refresh: () => render(selection.get()),
    setHover(target) { hover = target; shell.redraw(); },
    scrollTo: (x, y) => surface.scrollTo(x, y),
    viewport: () => surface.viewport(),
  };
  const extra = view.extras ? view.extras(root, shell) : null;
  if (extra?.before) root.append(...extra.before);
  const surface = createSurface(root, {
    paint(ctx, v) {
      if (!layout || layout.hidden) return;
      const done = view.paint(ctx, layout, { ...v, dpr: dpr() }, focus(), image);
      if (done && done.labels !== undefined) root.dataset.labels = String(done.labels);
    },
    onPointer,
    label: t(view.LABEL),
  });
  if (!view.OWN_KEYS) surface.scroller.addEventListener("keydown", pictureKeys(view, shell));
  const tooltip = view.tooltip ? createTooltip(root) : null;
  const caption = el("p", { class: "bv-caption" });
  root.append(...(extra?.after || []), caption);

  function onPointer(event, p) {
    if (!layout || layout.hidden) return;
    const viewport = { x: p.x - p.vx, y: p.y - p.vy };
    const target = event.type === "pointerleave" ? null : view.hit(layout, p.x, p.y, viewport);
    if (event.type === "click") {
      const answer = target && view.click ? view.click(layout, target, selection.get(), { ui, env }) : null;
      if (answer?.lock !== undefined) { lock = { target: answer.lock, scope: layout.lockScope }; shell.redraw(); }
      if (answer?.patch) selection.set(answer.patch); // the hover stays while the pointer does
      return;
    }
    const next = target && target.hover !== false ? target : null;
    surface.scroller.style.cursor = target && view.click ? "pointer" : "";
    if (JSON.stringify(next) !== JSON.stringify(hover)) {
      hover = next;
      shell.redraw();
    }
    if (tooltip) {
      const lines = next ? view.tooltip(layout, next) : null;
      if (lines) tooltip.show(lines, p.vx, p.vy); else tooltip.hide();
    }
  }

  /** The box a layout gets; beside: the caption beside the picture (which takes its width) instead of under it. */
  function layoutSize(beside = root.classList.contains("bv-beside")) {
    const reserve = extra?.reserve ? extra.reserve() : 0;
    const width = (root.clientWidth || 600) - (beside ? CAPTION_WIDTH + CAPTION_GAP : 0) - BOX_BORDER;
    return { width, maxHeight: (env.maxHeight ? env.maxHeight({ beside }) : 600) - reserve - BOX_BORDER,
      measure: measureText, labelMax: labelMax(), fillWidth: fillsWidth(root), theme: theme() };
  }

  function update(state) {
    const before = layout;
    const wide = !extra && root.clientWidth >= BESIDE_MIN_WIDTH && getComputedStyle(caption).display !== "none";
    const placed = placeCaption(view, data, state, layoutSize, wide);
    root.classList.toggle("bv-beside", placed.beside);
    layout = placed.layout;
    surface.box.hidden = Boolean(layout.hidden);
    if (!layout.hidden) surface.setSize(layout.width, layout.height, layout.boxHeight + BOX_BORDER);
    caption.textContent = layout.caption || "";
    if (layout.drawn !== undefined) root.dataset.drawn = layout.drawn;
    if (layout.geometry) surface.scroller.dataset.geometry = JSON.stringify(layout.geometry);
    const to = view.reveal && !layout.hidden ? view.reveal(layout, before, surface.viewport()) : null;
    if (to) surface.scrollTo(to.x, to.y);
    extra?.refresh?.(layout, state, focus());
    surface.redraw();
  }

  function render(state) {
    if (state.view !== view.NAME) { dirty = true; return; }
    dirty = false;
    update(state);
  }

  const unsubscribe = selection.subscribe(everyFrame((state) => render(state)));
  const resize = new ResizeObserver(() => {
    if (selection.get().view === view.NAME && !dirty) update(selection.get());
  });
  resize.observe(root);
  render(selection.get());

  return {
    name: view.NAME,
    refresh: () => render(selection.get()),
    /** The payload object now holds other numbers (main.mjs setPayload): what was computed from it goes. */
    swap() { data.cache = createCache(); render(selection.get()); },
    /** The whole picture of what is on screen, for the PNG and SVG exports; null when there is no picture. */
    scene: () => {
      if (!layout || layout.hidden) return null;
      return exportScene(view, exportLayout(view, data, selection.get(), layoutSize()), focus(), image);
    },
    destroy() { unsubscribe(); resize.disconnect(); extra?.destroy?.(); root.remove(); },
  };
}

/** keys.mjs on a view's picture: the cursor highlights a row as a hover does; Enter keeps it as a click does. */
function pictureKeys(view, shell) {
  const { selection, payload, ui, env, root } = shell;
  return (event) => {
    const layout = shell.layout();
    if (!layout || layout.hidden) return;
    const rows = view.keyTarget ? view.keyRows(layout) : 0;
    const answer = pictureKey(event, selection.get(), payload, ui.keyRow ?? null, rows);
    if (!answer) return;
    event.preventDefault(); // the arrows move the cursor, not the scroll bars; the space bar does not page down
    if (answer.cursor !== undefined) {
      ui.keyRow = answer.cursor;
      const target = view.keyTarget(layout, answer.cursor);
      const to = view.reveal ? view.reveal({ ...layout, locked: target }, null, shell.viewport()) : null;
      if (to) shell.scrollTo(to.x, to.y);
      shell.setHover(target);
      root.dataset.cursor = String(answer.cursor);
    } else if (answer.keep) {
      const target = view.keyTarget(layout, ui.keyRow);
      const click = target && view.click ? view.click(layout, target, selection.get(), { ui, env }) : null;
      if (click?.patch) selection.set(click.patch);
    } else if (Object.keys(answer.patch).length) {
      selection.set(answer.patch);
    }
  };
}

/** The host's wish that a picture take its box's whole width too (presenter mode sets --bv-fill-width: 1). */
function fillsWidth(root) {
  return getComputedStyle(root).getPropertyValue("--bv-fill-width").trim() === "1";
}
