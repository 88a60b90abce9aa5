// A map of many points (the corpus's joint query/key map of a head, its sentence map), as pure functions around
// corpus-shell.mjs, the point maps' mount shell: layout (where each point falls for a window onto the map, its
// colour, a bitmap of every point and a grid of screen cells for hit tests), paint (the bitmap, then what the
// pointer shows), hit (the nearest point within a few pixels) and brush (the points in a rectangle). 100,000 points
// are one bitmap written pixel by pixel, not 100,000 canvas calls; a hover repaints that bitmap and one ring.
//
// The window onto the map: state.window = { cx, cy, zoom } (centre in map units, zoom 1: the whole map fits the box).
// Map units keep the two axes at one scale (a projection's distances read the same across and down): x in 0..1, y
// in 0..aspect, where aspect is the map's height over its width in the data.

import { tokenOf, isKey, tokenInSentence } from "./corpus-data.mjs";
import { t as tr } from "./i18n.mjs";

export const NAME = "point-map";
const CELL = 8; // hit grid cell, px
export const HIT_RADIUS = 7; // px: a point nearer than this to the pointer is under it
const MARGIN = 0.04; // of the box, around the whole map at zoom 1

/** Height over width of the map in its own units (1 for a degenerate map). */
export function aspectOf(map) {
  const [x0, x1, y0, y1] = map.header.bounds;
  return x1 > x0 && y1 > y0 ? (y1 - y0) / (x1 - x0) : 1;
}

/** Pixels per map unit at zoom 1: the whole map, with a margin, in a box of width x height. */
export function fitScale(aspect, width, height) {
  return Math.max(1e-9, Math.min(width / (1 + 2 * MARGIN), height / (aspect * (1 + 2 * MARGIN))));
}

/** The window that shows the whole map. */
export function wholeWindow(map) {
  return { cx: 0.5, cy: aspectOf(map) / 2, zoom: 1 };
}

/** The map point (map units) under the screen point { x, y } of a layout. */
export function toMap(layout, p) {
  const { window: w } = layout, k = layout.scale * w.zoom;
  return { x: w.cx + (p.x - layout.width / 2) / k, y: w.cy - (p.y - layout.height / 2) / k };
}

/** The screen point of the map point { x, y } (map units) in a layout: toMap's inverse. */
export function toScreen(layout, m) {
  const { window: w } = layout, k = layout.scale * w.zoom;
  return { x: layout.width / 2 + (m.x - w.cx) * k, y: layout.height / 2 - (m.y - w.cy) * k };
}

/** A window zoomed by `factor` about the screen point (sx, sy): the map point under it stays under it. */
export function zoomAt(layout, factor, sx, sy) {
  const { window: w, scale } = layout;
  const zoom = Math.min(Math.max(w.zoom * factor, 1), 400);
  const m = toMap(layout, { x: sx, y: sy }), k2 = scale * zoom;
  return { zoom, cx: m.x - (sx - layout.width / 2) / k2, cy: m.y + (sy - layout.height / 2) / k2 };
}

/** The window moved by (dx, dy) screen pixels (a drag). */
export function panBy(layout, dx, dy) {
  const k = layout.scale * layout.window.zoom;
  return { ...layout.window, cx: layout.window.cx - dx / k, cy: layout.window.cy + dy / k };
}

/** "#rrggbb" as the 32-bit pixel little-endian ImageData words hold (alpha 255). */
export function pixelWord(hex) {
  const v = parseInt(hex.slice(1), 16);
  return (0xff000000 | ((v & 0xff) << 16) | (v & 0xff00) | ((v >> 16) & 0xff)) >>> 0;
}

/** The order points are drawn in: a query/key map alternates each token's query and key, so that neither kind
 * covers the other; others go in their own order. */
function drawOrder(map) {
  const order = new Int32Array(map.points);
  if (map.kind === "corpus_qk") for (let j = 0; j < map.points; j++) order[j] = (j >> 1) + (j & 1) * map.tokens;
  else for (let j = 0; j < map.points; j++) order[j] = j;
  return order;
}

/**
 * layout(map, state, size) -> { width, height, window, scale, sx, sy (Float32Array screen positions), visible,
 *   pixels { width, height, data } (dpr times the box), grid, colors, drawn, chosen ({ point } or null) }
 * state: { window, colors (corpus-data colorCategories), only (a category's index to show alone, or null), marked
 *   (a point ringed while nothing is hovered: the sentence selected with the Task tab's held-out table, or null) }
 * size: { width, height, dpr }
 */
export function layout(map, state, size) {
  const width = Math.max(40, Math.floor(size.width)), height = Math.max(40, Math.floor(size.height));
  const dpr = size.dpr || 1;
  const window = state.window || wholeWindow(map);
  const aspect = aspectOf(map);
  const scale = fitScale(aspect, width, height);
  const k = scale * window.zoom;
  const n = map.points;
  const sx = new Float32Array(n), sy = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    sx[i] = width / 2 + (map.x[i] - window.cx) * k;
    sy[i] = height / 2 - (map.y[i] * aspect - window.cy) * k;
  }
  const colors = state.colors;
  const only = state.only ?? null;
  const order = drawOrder(map);
  const pixels = paintPoints({ sx, sy, order, width, height, dpr, colors, only, zoom: window.zoom, n });
  const grid = buildGrid(sx, sy, width, height, colors, only);
  const marked = state.marked ?? null;
  const out = { width, height, window, scale, aspect, sx, sy, pixels, grid, colors, only, map,
    drawn: `${map.kind}:${map.header.layer ?? ""}:${map.header.head ?? ""}:${grid.count}`,
    caption: caption(map, grid.count), chosen: marked === null ? null : { point: marked } };
  out.geometry = { points: landmarks(out),
    marked: marked === null ? null : [marked, Math.round(sx[marked] * 10) / 10, Math.round(sy[marked] * 10) / 10] };
  return out;
}

/** For automation (tests, a benchmark): up to 12 points, [point, x, y], that a pointer at their place hits. */
export function landmarks(layout, most = 12) {
  const found = [];
  const { members } = layout.grid;
  const step = Math.max(1, Math.floor(members.length / (most * 8)));
  for (let m = 0; m < members.length && found.length < most; m += step) {
    const i = members[m];
    const x = layout.sx[i], y = layout.sy[i];
    if (x < 12 || y < 12 || x > layout.width - 12 || y > layout.height - 12) continue;
    if (hit(layout, x, y)?.point === i) found.push([i, Math.round(x * 10) / 10, Math.round(y * 10) / 10]);
  }
  return found;
}

function caption(map, shown) {
  const h = map.header;
  if (map.kind === "corpus_qk") {
    return tr("Layer {layer}, head {head}: queries and keys of {tokens} tokens from {sentences} sentences, projected "
      + "together (PCA after AttentionViz's normalization); {shown} points in the window.", { layer: h.layer,
      head: h.head, tokens: map.tokens.toLocaleString("en"), sentences: h.sentences.toLocaleString("en"),
      shown: shown.toLocaleString("en") });
  }
  return tr(h.pooling === "cls" ? "{n} sentences by their [CLS] vector at hidden layer {layer} (0 = embeddings), "
    + "projected by PCA." : "{n} sentences by their mean vector at hidden layer {layer} (0 = embeddings), projected "
    + "by PCA.", { n: map.points.toLocaleString("en"), layer: h.layer });
}

/** The bitmap of every point: squares of a side that grows with the zoom, the chosen category drawn last. */
export function paintPoints({ sx, sy, order, width, height, dpr, colors, only, zoom, n }) {
  const w = Math.round(width * dpr), h = Math.round(height * dpr);
  const data = new Uint8ClampedArray(w * h * 4);
  const words = new Uint32Array(data.buffer);
  const side = Math.max(1, Math.round((n > 30000 ? 2 : 3) * dpr * Math.min(2, Math.sqrt(zoom))));
  const table = colors.colors.map(pixelWord);
  const faint = pixelWord("#e4e4e4");
  const put = (i, word) => {
    const x0 = Math.round(sx[i] * dpr - side / 2), y0 = Math.round(sy[i] * dpr - side / 2);
    if (x0 >= w || y0 >= h || x0 + side <= 0 || y0 + side <= 0) return;
    for (let y = Math.max(0, y0); y < Math.min(h, y0 + side); y++) {
      words.fill(word, y * w + Math.max(0, x0), y * w + Math.min(w, x0 + side));
    }
  };
  const index = colors.index;
  for (let j = 0; j < n; j++) {
    const i = order[j];
    if (only === null || index[i] !== only) put(i, only === null ? table[index[i]] : faint);
  }
  if (only !== null) for (let j = 0; j < n; j++) if (index[order[j]] === only) put(order[j], table[only]);
  return { width: w, height: h, data };
}

/** Screen cells of CELL px, each listing the points drawn in it (a counting sort): hit tests look at 9 cells. */
export function buildGrid(sx, sy, width, height, colors, only) {
  const cols = Math.ceil(width / CELL) + 1, rows = Math.ceil(height / CELL) + 1;
  const cellOf = new Int32Array(sx.length).fill(-1);
  const starts = new Int32Array(cols * rows + 1);
  let count = 0;
  for (let i = 0; i < sx.length; i++) {
    if (sx[i] < 0 || sy[i] < 0 || sx[i] >= width || sy[i] >= height) continue;
    if (only !== null && only !== undefined && colors.index[i] !== only) continue;
    const c = Math.floor(sy[i] / CELL) * cols + Math.floor(sx[i] / CELL);
    cellOf[i] = c;
    starts[c + 1] += 1;
    count += 1;
  }
  for (let c = 0; c < cols * rows; c++) starts[c + 1] += starts[c];
  const fill = starts.slice(0, -1);
  const members = new Int32Array(count);
  for (let i = 0; i < sx.length; i++) if (cellOf[i] >= 0) members[fill[cellOf[i]]++] = i;
  return { cols, rows, starts, members, count };
}

/** The point nearest to (x, y) within HIT_RADIUS px, as { point }, or null. */
export function hit(layout, x, y) {
  const { grid, sx, sy } = layout;
  const cx = Math.floor(x / CELL), cy = Math.floor(y / CELL);
  let best = null, bestD = HIT_RADIUS * HIT_RADIUS;
  for (let r = cy - 1; r <= cy + 1; r++) {
    for (let c = cx - 1; c <= cx + 1; c++) {
      if (r < 0 || c < 0 || r >= grid.rows || c >= grid.cols) continue;
      const cell = r * grid.cols + c;
      for (let m = grid.starts[cell]; m < grid.starts[cell + 1]; m++) {
        const i = grid.members[m];
        const d = (sx[i] - x) ** 2 + (sy[i] - y) ** 2;
        if (d <= bestD && (best === null || d < bestD || i < best)) { best = i; bestD = d; }
      }
    }
  }
  return best === null ? null : { point: best };
}

const DIRECTIONS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

/**
 * The keyboard's cursor over the points drawn (corpus-shell.mjs): from `from` ({ point } or null), the nearest point
 * in the arrow's direction (within 45 degrees of it), or with no point yet the one nearest the middle; n / p (next
 * and previous nearest) step to the nearest point not yet visited, or back along the visited ones. Returns
 * { point } or null (nothing that way). visited: the points stepped through, oldest first (the caller's).
 */
export function keyStep(layout, from, key, visited = []) {
  const { grid, sx, sy } = layout;
  const members = grid.members;
  if (!members.length) return null;
  const nearest = (x, y, keep) => {
    let best = null, bestD = Infinity;
    for (const i of members) {
      if (!keep(i)) continue;
      const d = (sx[i] - x) ** 2 + (sy[i] - y) ** 2;
      if (d < bestD || (d === bestD && i < best)) { best = i; bestD = d; }
    }
    return best === null ? null : { point: best };
  };
  if (from === null || from === undefined) return nearest(layout.width / 2, layout.height / 2, () => true);
  const x = sx[from.point], y = sy[from.point];
  if (key === "n") {
    const seen = new Set([...visited, from.point]);
    return nearest(x, y, (i) => !seen.has(i));
  }
  if (key === "p") {
    const at = visited.lastIndexOf(from.point);
    const back = at > 0 ? visited[at - 1] : visited.length && at < 0 ? visited[visited.length - 1] : null;
    return back === null ? null : { point: back };
  }
  const d = DIRECTIONS[key];
  if (!d) return null;
  return nearest(x, y, (i) => {
    const along = (sx[i] - x) * d[0] + (sy[i] - y) * d[1];
    const across = Math.abs((sx[i] - x) * d[1] - (sy[i] - y) * d[0]);
    return i !== from.point && along > 0 && across <= along;
  });
}

/** The points drawn inside the rectangle between two screen points, in their order (Int32Array). */
export function brush(layout, a, b) {
  const x0 = Math.min(a.x, b.x), x1 = Math.max(a.x, b.x), y0 = Math.min(a.y, b.y), y1 = Math.max(a.y, b.y);
  const { grid, sx, sy } = layout;
  const found = [];
  const c0 = Math.max(0, Math.floor(x0 / CELL)), c1 = Math.min(grid.cols - 1, Math.floor(x1 / CELL));
  const r0 = Math.max(0, Math.floor(y0 / CELL)), r1 = Math.min(grid.rows - 1, Math.floor(y1 / CELL));
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      const cell = r * grid.cols + c;
      for (let m = grid.starts[cell]; m < grid.starts[cell + 1]; m++) {
        const i = grid.members[m];
        if (sx[i] >= x0 && sx[i] <= x1 && sy[i] >= y0 && sy[i] <= y1) found.push(i);
      }
    }
  }
  return Int32Array.from(found.sort((p, q) => p - q));
}

/** The other point of the same token in a query/key map (its key for a query, and back), or null. */
export function partner(map, point) {
  if (map.kind !== "corpus_qk") return null;
  return isKey(map, point) ? point - map.tokens : point + map.tokens;
}

/**
 * paint(ctx, layout, focus, image): the bitmap, then the hovered or chosen point (a ring, and in a query/key map
 * a line to the same token's other point) and the brush's rectangle. focus = { active: { point } | null,
 * brush: { a, b } | null }.
 */
export function paint(ctx, layout, focus, image) {
  ctx.drawImage(image(layout.pixels), 0, 0, layout.width, layout.height);
  const active = focus.active;
  if (active && active.point !== undefined) {
    const i = active.point, j = partner(layout.map, i);
    ctx.lineWidth = 2;
    ctx.strokeStyle = "#111";
    if (j !== null) {
      ctx.beginPath();
      ctx.moveTo(layout.sx[i], layout.sy[i]);
      ctx.lineTo(layout.sx[j], layout.sy[j]);
      ctx.stroke();
      ring(ctx, layout.sx[j], layout.sy[j], 4);
    }
    ring(ctx, layout.sx[i], layout.sy[i], 6);
  }
  if (focus.brush) {
    const { a, b } = focus.brush;
    ctx.fillStyle = "rgba(31, 119, 180, 0.08)";
    ctx.strokeStyle = "#1f77b4";
    ctx.lineWidth = 1;
    ctx.fillRect(Math.min(a.x, b.x), Math.min(a.y, b.y), Math.abs(b.x - a.x), Math.abs(b.y - a.y));
    ctx.strokeRect(Math.min(a.x, b.x), Math.min(a.y, b.y), Math.abs(b.x - a.x), Math.abs(b.y - a.y));
  }
}

function ring(ctx, x, y, r) {
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.stroke();
}

/** What a point is, in lines of text (the tooltip): the token and its sentence, or the sentence and its label. */
export function tooltip(layout, target) {
  const map = layout.map, i = target.point;
  if (map.kind === "corpus_qk") {
    const t = tokenOf(map, i);
    const where = tokenInSentence(map, t);
    const tag = map.tag[t] >= 0 ? ` (${map.tags.get(map.tag[t])})` : "";
    return [`${tr(isKey(map, i) ? "key" : "query")} \u00b7 ${map.pieces.get(map.piece[t])}${tag} \u00b7 `
      + tr("position {position} \u00b7 sentence {sentence}", { position: map.position[t],
        sentence: map.sentenceIds[map.sentence[t]] }),
    `${where.before} [${where.word}] ${where.after}`.trim()];
  }
  const label = map.label[i] >= 0 ? map.labels.get(map.label[i]) : tr("no label");
  const predicted = map.prediction && map.prediction[i] >= 0
    ? ` \u00b7 ${tr("predicted {label}", { label: map.labels.get(map.prediction[i]) })}` : "";
  return [`${tr("sentence {sentence}", { sentence: map.sentenceIds[i] })} \u00b7 ${label}${predicted}`, map.text(i)];
}
