// Saving what is on screen: the active view's scene painted again, onto a large canvas (PNG) or into the SVG
// recorder (SVG), under a title line that says what it is.

import { measureText } from "./dom.mjs";
import { createSvgContext } from "./svg.mjs";

const TITLE_H = 30;
const TITLE_FONT = `15px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;

function compose(ctx, scene, title) {
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, scene.width, scene.height + TITLE_H);
  ctx.font = TITLE_FONT;
  ctx.fillStyle = "#222";
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillText(title, 8, TITLE_H / 2);
  ctx.save();
  ctx.translate(0, TITLE_H);
  ctx.beginPath();
  ctx.rect(0, 0, scene.width, scene.height);
  ctx.clip();
  scene.paint(ctx);
  ctx.restore();
}

/** The scene as a PNG Blob at `scale` times its CSS size (2: sharp on a slide or a printout). */
export function scenePNG(scene, title, scale = 2) {
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(scene.width * scale);
  canvas.height = Math.round((scene.height + TITLE_H) * scale);
  const ctx = canvas.getContext("2d");
  ctx.scale(scale, scale);
  compose(ctx, scene, title);
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("no PNG"))),
    "image/png"));
}

/** The scene as an SVG document (text and lines as vectors; heatmap cells as an embedded bitmap). */
export function sceneSVG(scene, title) {
  const ctx = createSvgContext(scene.width, scene.height + TITLE_H, { measure: measureText });
  ctx.note(`bertviz-app attention view: ${title}`);
  if (scene.bitmap) {
    ctx.note("The heatmap cells are an embedded PNG bitmap, one pixel per cell, scaled without smoothing "
      + "(hundreds of thousands of cells as vector rectangles would make a file no editor opens); labels, "
      + "lines and marks are vectors.");
  }
  compose(ctx, scene, title);
  return ctx.toString();
}
