// Saving a view: its whole picture (every row and label at the chosen layer and head, not the part the box shows)
// painted again, onto a large canvas (PNG) or into the SVG recorder (SVG), under a title line that says what it is.

import { measureText } from "./dom.mjs";
import { createSvgContext } from "./svg.mjs";

const TITLE_H = 30;
const TITLE_FONT = `15px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
// Chromium refuses canvases over 16,384 pixels a side or about 268 million pixels, and toBlob on the largest takes
// seconds: a 512-token matrix with every label (9,300 px square) is saved at about 1x instead of 2x.
const MAX_SIDE = 16384;
const MAX_PIXELS = 100e6;

/** The exported picture's size in CSS pixels: the scene under a title line, at least as wide as the title. */
export function exportSize(scene, title, measure = measureText) {
  return { width: Math.ceil(Math.max(scene.width, measure(TITLE_FONT, title) + 16)),
    height: Math.ceil(scene.height + TITLE_H) };
}

/** Pixels per CSS pixel of the PNG: `wanted` (2: sharp on a slide) unless the canvas would be too large. */
export function exportScale(width, height, wanted = 2) {
  return Math.min(wanted, MAX_SIDE / Math.max(width, height, 1), Math.sqrt(MAX_PIXELS / Math.max(width * height, 1)));
}

function compose(ctx, scene, title, size) {
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, size.width, size.height);
  ctx.font = TITLE_FONT;
  ctx.fillStyle = "#222";
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillText(title, 8, TITLE_H / 2);
  ctx.save();
  ctx.translate(0, TITLE_H);
  scene.paint(ctx); // the whole picture: nothing to clip (a view clips its own cells under its label bands)
  ctx.restore();
}

/** The scene as a PNG Blob at `scale` times its CSS size (2: sharp on a slide or a printout), less if too large. */
export function scenePNG(scene, title, scale = 2) {
  const size = exportSize(scene, title);
  const s = exportScale(size.width, size.height, scale);
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(size.width * s);
  canvas.height = Math.round(size.height * s);
  const ctx = canvas.getContext("2d");
  ctx.scale(s, s);
  compose(ctx, scene, title, size);
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("no PNG"))),
    "image/png"));
}

/** The scene as an SVG document (text and lines as vectors; heatmap cells as an embedded bitmap). */
export function sceneSVG(scene, title, measure = measureText) {
  const size = exportSize(scene, title, measure);
  const ctx = createSvgContext(size.width, size.height, { measure });
  ctx.note(`bertviz-app attention view: ${title}`);
  if (scene.bitmap) {
    ctx.note("The heatmap cells are an embedded PNG bitmap, one pixel per cell, scaled without smoothing "
      + "(hundreds of thousands of cells as vector rectangles would make a file no editor opens); labels, "
      + "lines and marks are vectors.");
  }
  compose(ctx, scene, title, size);
  return ctx.toString();
}
