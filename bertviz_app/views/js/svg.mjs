// A recorder with the part of CanvasRenderingContext2D that our views paint with, writing SVG instead of
// pixels: the views have one paint function each, and the SVG export replays it here. Supported: save/restore,
// translate/scale/rotate, paths of moveTo/lineTo/rect/closePath with fill/stroke/clip, fillRect/strokeRect,
// fillText/measureText, drawImage (each bitmap embedded once as a PNG data URL, then referenced), globalAlpha, setLineDash. Anything else throws,
// so a view cannot silently paint something the export would drop.

export function escapeXml(text) {
  // Characters XML 1.0 forbids even when escaped become U+FFFD; a token could carry one.
  return String(text)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "\ufffd")
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

const num = (x) => (Math.round(x * 100) / 100).toString();

function parseFont(font) {
  const m = /^\s*((?:(?:italic|bold|normal|\d00)\s+)*)([\d.]+)px\s+(.+)$/.exec(font);
  if (!m) return { style: "", size: 10, family: "sans-serif" };
  return { style: m[1].trim(), size: Number(m[2]), family: m[3] };
}

/** A bitmap's id in the defs, put there the first time it is drawn: every drawing then refers to it (the All heads
 * view draws its 72 tiles from one atlas, which inlined at each made a 5 MB file). */
function embedOnce(images, defs, image, imageUrl) {
  if (!images.has(image)) {
    const id = `image${images.size}`;
    images.set(image, id);
    defs.push(`<image id="${id}" width="${image.width}" height="${image.height}" href="${imageUrl(image)}"/>`);
  }
  return images.get(image);
}

/**
 * createSvgContext(width, height, { measure(font, text) -> px, imageUrl(image) -> data URL }).
 * Paint into it like a canvas context, then call toString() for the document; note(text) adds a comment.
 */
export function createSvgContext(width, height, { measure = (font, text) => text.length * 8,
  imageUrl = (image) => image.toDataURL("image/png") } = {}) {
  const body = [];
  const defs = [];
  const notes = [];
  const images = new Map();
  let clips = 0;
  let path = [];
  let m = [1, 0, 0, 1, 0, 0]; // a b c d e f, as canvas: x' = a x + c y + e, y' = b x + d y + f
  let stack = [];
  let openGroups = 0;
  let dash = [];
  const ctx = {
    fillStyle: "#000", strokeStyle: "#000", lineWidth: 1, globalAlpha: 1, font: "10px sans-serif",
    textAlign: "start", textBaseline: "alphabetic", imageSmoothingEnabled: true, lineCap: "butt",
  };
  const pt = (x, y) => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];
  const plain = () => m[1] === 0 && m[2] === 0;
  const alpha = () => (ctx.globalAlpha < 1 ? ` opacity="${num(ctx.globalAlpha)}"` : "");
  const d = () => path.map(([op, x, y]) => (op === "Z" ? "Z" : `${op}${num(x)} ${num(y)}`)).join("");

  Object.assign(ctx, {
    save() {
      stack.push({ m: [...m], openGroups, dash: [...dash], fillStyle: ctx.fillStyle, strokeStyle: ctx.strokeStyle,
        lineWidth: ctx.lineWidth, globalAlpha: ctx.globalAlpha, font: ctx.font, textAlign: ctx.textAlign,
        textBaseline: ctx.textBaseline, imageSmoothingEnabled: ctx.imageSmoothingEnabled });
      openGroups = 0;
    },
    restore() {
      const s = stack.pop();
      if (!s) return;
      for (; openGroups > 0; openGroups--) body.push("</g>");
      ({ m, openGroups, dash } = s);
      for (const k of ["fillStyle", "strokeStyle", "lineWidth", "globalAlpha", "font", "textAlign", "textBaseline",
        "imageSmoothingEnabled"]) ctx[k] = s[k];
    },
    translate(x, y) { m = [m[0], m[1], m[2], m[3], m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]]; },
    scale(sx, sy) { m = [m[0] * sx, m[1] * sx, m[2] * sy, m[3] * sy, m[4], m[5]]; },
    rotate(t) {
      const c = Math.cos(t), s = Math.sin(t);
      m = [m[0] * c + m[2] * s, m[1] * c + m[3] * s, m[2] * c - m[0] * s, m[3] * c - m[1] * s, m[4], m[5]];
    },
    setLineDash(segments) { dash = [...segments]; },
    beginPath() { path = []; },
    moveTo(x, y) { path.push(["M", ...pt(x, y)]); },
    lineTo(x, y) { path.push(["L", ...pt(x, y)]); },
    closePath() { path.push(["Z"]); },
    rect(x, y, w, h) {
      ctx.moveTo(x, y); ctx.lineTo(x + w, y); ctx.lineTo(x + w, y + h); ctx.lineTo(x, y + h); ctx.closePath();
    },
    fill() { if (path.length) body.push(`<path d="${d()}" fill="${escapeXml(ctx.fillStyle)}"${alpha()}/>`); },
    stroke() {
      if (!path.length) return;
      const width = ctx.lineWidth * Math.hypot(m[0], m[1]);
      const dashes = dash.length ? ` stroke-dasharray="${dash.map(num).join(" ")}"` : "";
      body.push(`<path d="${d()}" fill="none" stroke="${escapeXml(ctx.strokeStyle)}" stroke-width="${num(width)}"`
        + `${dashes}${alpha()}/>`);
    },
    clip() {
      const id = `clip${clips++}`;
      defs.push(`<clipPath id="${id}"><path d="${d()}"/></clipPath>`);
      body.push(`<g clip-path="url(#${id})">`);
      openGroups++;
    },
    fillRect(x, y, w, h) {
      if (plain()) {
        const [x0, y0] = pt(x, y);
        body.push(`<rect x="${num(x0)}" y="${num(y0)}" width="${num(w * m[0])}" height="${num(h * m[3])}" `
          + `fill="${escapeXml(ctx.fillStyle)}"${alpha()}/>`);
        return;
      }
      const saved = path;
      ctx.beginPath(); ctx.rect(x, y, w, h); ctx.fill();
      path = saved;
    },
    strokeRect(x, y, w, h) {
      const saved = path;
      ctx.beginPath(); ctx.rect(x, y, w, h); ctx.stroke();
      path = saved;
    },
    measureText(text) { return { width: measure(ctx.font, String(text)) }; },
    fillText(text, x, y) {
      const f = parseFont(ctx.font);
      const anchor = { center: "middle", right: "end", end: "end" }[ctx.textAlign] || "start";
      const baseline = { middle: "central", top: "hanging", hanging: "hanging" }[ctx.textBaseline];
      const style = f.style.includes("bold") ? ` font-weight="bold"` : "";
      const italic = f.style.includes("italic") ? ` font-style="italic"` : "";
      const where = plain() ? `x="${num(pt(x, y)[0])}" y="${num(pt(x, y)[1])}" font-size="${num(f.size * m[3])}"`
        : `x="${num(x)}" y="${num(y)}" font-size="${num(f.size)}" transform="matrix(${m.map(num).join(" ")})"`;
      body.push(`<text ${where} font-family="${escapeXml(f.family)}" fill="${escapeXml(ctx.fillStyle)}" `
        + `text-anchor="${anchor}"${baseline ? ` dominant-baseline="${baseline}"` : ""}${style}${italic}`
        + `${alpha()} xml:space="preserve">${escapeXml(text)}</text>`);
    },
    drawImage(image, ...args) {
      let [sx, sy, sw, sh] = [0, 0, image.width, image.height];
      let dx, dy, dw, dh;
      if (args.length === 8) [sx, sy, sw, sh, dx, dy, dw, dh] = args;
      else if (args.length === 4) [dx, dy, dw, dh] = args;
      else if (args.length === 2) [dx, dy, dw, dh] = [...args, image.width, image.height];
      else throw new Error("drawImage takes 3, 5 or 9 arguments");
      if (!plain()) throw new Error("the SVG recorder draws images without rotation only");
      const [x0, y0] = pt(dx, dy);
      const id = embedOnce(images, defs, image, imageUrl);
      const pixelated = ctx.imageSmoothingEnabled ? ""
        : ` style="image-rendering:pixelated" image-rendering="pixelated"`;
      body.push(`<svg x="${num(x0)}" y="${num(y0)}" width="${num(dw * m[0])}" height="${num(dh * m[3])}" `
        + `viewBox="${num(sx)} ${num(sy)} ${num(sw)} ${num(sh)}" preserveAspectRatio="none"${alpha()}>`
        + `<use href="#${id}"${pixelated}/></svg>`);
    },
    note(text) { notes.push(text); },
    toString() {
      for (; openGroups > 0; openGroups--) body.push("</g>");
      const comments = notes.map((t) => `<!-- ${String(t).replace(/--/g, "\u2013")} -->\n`).join("");
      return `<?xml version="1.0" encoding="UTF-8"?>\n${comments}`
        + `<svg xmlns="http://www.w3.org/2000/svg" width="${num(width)}" height="${num(height)}" `
        + `viewBox="0 0 ${num(width)} ${num(height)}">\n<defs>${defs.join("")}</defs>\n${body.join("\n")}\n</svg>\n`;
    },
  });
  return ctx;
}
