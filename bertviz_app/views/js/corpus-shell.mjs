// The mount shell of the corpus views (corpus-heads.mjs, corpus-point-map.mjs): the only code around their
// pictures that touches the DOM. It owns one canvas the size of its box, the pointer (hover with its tooltip, a
// click, a drag that brushes or moves the map, the wheel's zoom) and resizing; the view's pure functions say what
// goes where (layout), draw it (paint) and what is under a point (hit). Nothing here asks a server: hovering,
// brushing and zooming are answered from the data in the page.
//
// mountCanvasView(container, view, options) -> { root, refresh(), redraw(), layout(), destroy() }
//   options.data()            the view's data now;  options.state() its state now (layout's second argument)
//   options.height(width)     the box's height for a width;  options.label  the canvas's aria-label
//   options.onClick(target)   a click on something;  options.onBrush(points, a, b)  a drag's rectangle (maps)
//   options.onWindow(window)  the map's window after a wheel, a pinch or a drag that moves it
//   options.drag()            "brush" or "move": what a drag does now (maps)
// The view's keyStep(layout, cursor, key, visited) -> target | null moves a keyboard cursor (Enter opens it).
// The root's data-drawn names what is drawn (tests wait for it), data-brush the brush's rectangle on screen;
// data-first-paint-ms and data-hover-ms are the last
// first picture's and hover's cost in the page, measured with performance.now (the benchmark reads them).

import { bitmapCanvases, createTooltip, el, everyFrame, fitCanvas } from "./dom.mjs";
import { paletteOf } from "./palette.mjs";

/** The host's palette (its switch sets --bv-palette in CSS), read with every layout. */
export const paletteAt = (root) => paletteOf(getComputedStyle(root).getPropertyValue("--bv-palette"));

const CLICK_SLOP = 4; // px a press may move and still be a click
const CURSOR_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "n", "p"]);

export function mountCanvasView(container, view, options) {
  const canvas = el("canvas", { class: "bv-corpus-canvas", role: "img", "aria-label": options.label || view.NAME,
    tabindex: "0" });
  const root = el("div", { class: `bv-corpus-view bv-${view.NAME}` }, canvas);
  container.append(root);
  const tooltip = createTooltip(root);
  const image = bitmapCanvases();
  // the brush's rectangle on screen, and in the view's own units (a map's) when it has them: a zoom or a move of
  // the map then carries the rectangle with the points it holds
  let layout = null, hover = null, brushRect = null, brushHeld = null, press = null, fresh = false;
  const dpr = () => window.devicePixelRatio || 1;

  function draw() {
    if (!layout) return;
    const started = performance.now();
    const ctx = fitCanvas(canvas, layout.width, layout.height, dpr());
    view.paint(ctx, layout, { hover, active: hover ?? layout.chosen ?? null, brush: brushRect }, image);
    if (fresh) { root.dataset.paintMs = (performance.now() - started).toFixed(1); fresh = false; }
  }
  const redraw = everyFrame(draw);

  function refresh() {
    const data = options.data();
    if (!data) { root.hidden = true; return; }
    root.hidden = false;
    const started = performance.now();
    const width = Math.max(160, root.clientWidth || container.clientWidth || 600);
    layout = view.layout(data, options.state(), { width, height: options.height(width),
      maxHeight: options.height(width), dpr: dpr(), palette: paletteAt(root) });
    hover = null;
    fresh = true;
    if (brushHeld) {
      brushRect = { a: view.toScreen(layout, brushHeld.a), b: view.toScreen(layout, brushHeld.b) };
      root.dataset.brush = JSON.stringify(brushRect);
    }
    draw();
    root.dataset.firstPaintMs = (performance.now() - started).toFixed(1);
    root.dataset.drawn = layout.drawn;
    if (layout.geometry) root.dataset.geometry = JSON.stringify(layout.geometry);
  }

  const point = (event) => {
    const r = canvas.getBoundingClientRect();
    return { x: event.clientX - r.left, y: event.clientY - r.top };
  };

  function hovered(p) {
    const started = performance.now();
    const target = layout ? view.hit(layout, p.x, p.y) : null;
    if (JSON.stringify(target) !== JSON.stringify(hover)) {
      hover = target;
      draw(); // now, not at the next frame: the measure below is the hover's whole cost
    }
    const lines = target && view.tooltip ? view.tooltip(layout, target) : null;
    if (lines) tooltip.show(lines, p.x, p.y); else tooltip.hide();
    canvas.style.cursor = target ? "pointer" : "";
    root.dataset.hoverMs = (performance.now() - started).toFixed(2);
  }

  canvas.addEventListener("pointerdown", (event) => {
    if (!layout) return;
    press = { start: point(event), last: point(event), id: event.pointerId, moved: false };
    canvas.setPointerCapture?.(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    const p = point(event);
    if (!press) { hovered(p); return; }
    const far = Math.hypot(p.x - press.start.x, p.y - press.start.y) > CLICK_SLOP;
    if (!press.moved && !far) return;
    press.moved = true;
    tooltip.hide();
    if (options.drag?.() === "move" && view.panBy) {
      options.onWindow?.(view.panBy(layout, p.x - press.last.x, p.y - press.last.y));
    } else if (view.brush) {
      brushRect = { a: press.start, b: p };
      brushHeld = view.toMap ? { a: view.toMap(layout, brushRect.a), b: view.toMap(layout, brushRect.b) } : null;
      root.dataset.brush = JSON.stringify(brushRect);
      redraw();
    }
    press.last = p;
  });
  canvas.addEventListener("pointerup", (event) => {
    if (!press) return;
    const p = point(event), was = press;
    press = null;
    if (!was.moved) {
      const target = layout ? view.hit(layout, p.x, p.y) : null;
      if (target) options.onClick?.(target);
      return;
    }
    if (brushRect && view.brush) options.onBrush?.(view.brush(layout, brushRect.a, brushRect.b), brushRect);
  });
  canvas.addEventListener("pointerleave", () => {
    if (press) return;
    hover = null;
    tooltip.hide();
    redraw();
  });
  canvas.addEventListener("wheel", (event) => {
    if (!layout || !view.zoomAt) return;
    event.preventDefault();
    const p = point(event);
    options.onWindow?.(view.zoomAt(layout, Math.exp(-event.deltaY / 400), p.x, p.y));
  }, { passive: false });

  wireKeys(canvas, view, { layout: () => layout, hover: () => hover, root, tooltip, onClick: options.onClick,
    show(target) { hover = target; draw(); }, hide() { hover = null; tooltip.hide(); redraw(); } });

  const onResize = everyFrame(() => { if (layout) refresh(); });
  const resize = new ResizeObserver(onResize);
  resize.observe(container);

  return {
    root, canvas, refresh, redraw,
    layout: () => layout,
    clearBrush() { brushRect = null; brushHeld = null; delete root.dataset.brush; redraw(); },
    brushRect: () => brushRect,
    destroy() { resize.disconnect(); root.remove(); },
  };
}

/**
 * The keyboard on a corpus view's canvas: a cursor over what the view draws (its keyStep: arrows, and on a map n / p
 * for the next and previous nearest point), shown as a hover with its tooltip; Enter or space opens it as a click.
 */
function wireKeys(canvas, view, { layout, hover, root, tooltip, onClick, show, hide }) {
  let visited = [];
  canvas.addEventListener("keydown", (event) => {
    const l = layout();
    if (!l || !view.keyStep || event.altKey || event.ctrlKey || event.metaKey) return;
    if ((event.key === "Enter" || event.key === " ") && hover()) {
      onClick?.(hover());
    } else if (CURSOR_KEYS.has(event.key)) {
      const next = view.keyStep(l, hover(), event.key, visited);
      if (!next) return;
      if (next.point !== undefined && event.key !== "p") {
        visited = [...visited.filter((i) => i !== next.point), next.point].slice(-200);
      }
      show(next);
      root.dataset.cursor = JSON.stringify(next);
      const lines = view.tooltip ? view.tooltip(l, next) : null;
      const at = next.point !== undefined ? { x: l.sx[next.point], y: l.sy[next.point] } : { x: 8, y: 8 };
      if (lines) tooltip.show(lines, at.x, at.y);
    } else {
      return; // Tab and the rest stay the browser's
    }
    event.preventDefault();
  });
  canvas.addEventListener("blur", hide);
}
