// Small DOM helpers shared by the views. Text goes in through textContent only: a token is text, never markup.

/** el("div", {class: "x", onclick: fn}, child, "text", ...): an element; strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

/** Calls fn at most once per animation frame, with the latest arguments. */
export function everyFrame(fn) {
  let pending = null;
  return (...args) => {
    const first = pending === null;
    pending = args;
    if (!first) return;
    requestAnimationFrame(() => {
      const latest = pending;
      pending = null;
      fn(...latest);
    });
  };
}

export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name, style: "display:none" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

let measurer = null;
/** Text width in CSS pixels for a canvas font string. */
export function measureText(font, text) {
  measurer ||= document.createElement("canvas").getContext("2d");
  measurer.font = font;
  return measurer.measureText(text).width;
}

/**
 * A scrolling drawing box: a canvas the size of the visible part, and a transparent scroller above it whose
 * spacer has the size of the whole picture. The view paints only what is visible, with the scroll offsets,
 * so a 512-token picture costs no more than the screen, and labels painted at the box's edge stay in place
 * while the rows scroll (sticky axes).
 *
 * createSurface(parent, { paint(ctx, viewport), onPointer(event, point), label })
 *   viewport = { x, y, width, height } in picture pixels (x, y: scroll offsets)
 *   point = { x, y } in picture pixels, and vx, vy within the box
 * returns { box, setSize(width, height, boxHeight), redraw(), viewport(), scrollTo(x, y), destroy() }
 */
/** A canvas's backing store sized to `width` x `height` CSS pixels at `ratio` device pixels each: its context, scaled
 * to CSS pixels and cleared. */
export function fitCanvas(canvas, width, height, ratio) {
  const w = Math.round(width * ratio), h = Math.round(height * ratio);
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return ctx;
}

/** Each image's pixels ({ width, height, data }) drawn once into a canvas of its own, kept while the pixels live:
 * what a paint draws images from. */
export function bitmapCanvases() {
  const images = new WeakMap();
  return (pixels) => {
    if (!images.has(pixels)) {
      const canvas = document.createElement("canvas");
      canvas.width = pixels.width;
      canvas.height = pixels.height;
      if (pixels.width && pixels.height) {
        canvas.getContext("2d").putImageData(new ImageData(pixels.data, pixels.width, pixels.height), 0, 0);
      }
      images.set(pixels, canvas);
    }
    return images.get(pixels);
  };
}

export function createSurface(parent, { paint, onPointer, label }) {
  const canvas = el("canvas", { class: "bv-canvas", "aria-hidden": "true" });
  const spacer = el("div", { class: "bv-spacer" });
  const scroller = el("div", { class: "bv-scroller", tabindex: "0", role: "img", "aria-label": label }, spacer);
  const box = el("div", { class: "bv-surface" }, canvas, scroller);
  parent.append(box);
  let size = { width: 0, height: 0 };

  const viewport = () => ({ x: scroller.scrollLeft, y: scroller.scrollTop, width: scroller.clientWidth,
    height: scroller.clientHeight });
  const draw = () => {
    const v = viewport();
    if (v.width === 0 || v.height === 0) return;
    // A host may zoom the views with CSS (the app's presenter mode): paint at the size they are shown, so that the
    // canvas stays as sharp as the text around it.
    const dpr = (window.devicePixelRatio || 1) * cssZoom(canvas);
    paint(fitCanvas(canvas, v.width, v.height, dpr), v);
  };
  const redraw = everyFrame(draw);
  scroller.addEventListener("scroll", redraw, { passive: true });
  const pointer = (event) => {
    const r = scroller.getBoundingClientRect(); // in zoomed pixels when a host zooms; the picture's are not
    const zoom = cssZoom(scroller);
    const vx = (event.clientX - r.left) / zoom, vy = (event.clientY - r.top) / zoom;
    onPointer?.(event, { x: vx + scroller.scrollLeft, y: vy + scroller.scrollTop, vx, vy });
  };
  for (const type of ["pointermove", "pointerleave", "click"]) scroller.addEventListener(type, pointer);
  const resize = new ResizeObserver(redraw);
  resize.observe(scroller);

  return {
    box, scroller, canvas,
    setSize(width, height, boxHeight) {
      size = { width, height };
      spacer.style.width = `${Math.ceil(width)}px`;
      spacer.style.height = `${Math.ceil(height)}px`;
      box.style.height = `${Math.ceil(boxHeight)}px`;
    },
    size: () => size,
    viewport,
    redraw,
    drawNow: draw,
    scrollTo(x, y) { scroller.scrollTo({ left: x, top: y }); },
    destroy() { resize.disconnect(); box.remove(); },
  };
}

/** The CSS zoom an element is shown at (1 where the browser has no `currentCSSZoom`). */
export function cssZoom(node) {
  return node.currentCSSZoom || 1;
}

/** A floating tooltip inside `parent`; show(lines, x, y) in the parent's pixels, hide(). */
export function createTooltip(parent) {
  const tip = el("div", { class: "bv-tooltip", role: "status", hidden: true });
  parent.append(tip);
  return {
    show(lines, x, y) {
      tip.replaceChildren(...lines.map((line, k) => el("div", { class: k === 0 ? "bv-tip-title" : "" }, line)));
      tip.hidden = false;
      const pw = parent.clientWidth;
      const tw = tip.offsetWidth;
      tip.style.left = `${Math.max(4, Math.min(x + 16, pw - tw - 4))}px`;
      tip.style.top = `${y + 18}px`;
    },
    hide() { tip.hidden = true; },
  };
}

/** Put the stylesheets `names` (files of bertviz_app/styles/) into the document or shadow root `root`, each once, in
 * that order. The bundle step (views/page.py) defines __bvStylesheets with the text of every file its modules name in
 * an addStylesheet call; under node's tests there is none, and nothing is put. */
export function addStylesheet(root, ...names) {
  const sheets = typeof __bvStylesheets === "undefined" ? {} : __bvStylesheets;
  const host = root.head || root;
  for (const name of names) {
    if (!(name in sheets) || host.querySelector(`style[data-bv-stylesheet="${name}"]`)) continue;
    const style = (root.ownerDocument || root).createElement("style");
    style.setAttribute("data-bv-stylesheet", name);
    style.textContent = sheets[name];
    host.append(style);
  }
}
