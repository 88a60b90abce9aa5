// Matrix view: one row per attending token, one column per attended token, one pixel of a bitmap per cell
// (a 512 x 512 head is a single ImageData blit), scaled to the zoom; labels stay at the edges while it scrolls.
// Pure layout / paint / hit functions; view-shell.mjs mounts them.

import { shownBlocks } from "./data.mjs";
import { drawnKey } from "./selection.mjs";
import { FIT_LABEL_PX, LABEL_FONT_PX, LABEL_PITCH, labelType, thinLabels, truncate, visibleRange } from "./layout.mjs";
import { BOUNDARY_COLOR, formatShare, formatWeight, paintValues, SELECTED_COLOR } from "./scale.mjs";
import { attentionLUT, largestLabel, THEMES } from "./theme.mjs";
import { t } from "./i18n.mjs";

export const NAME = "matrix";
export const LABEL = "Attention matrix";
export const BITMAP = true; // the SVG export says that the cells are an embedded bitmap
const BASE = labelType(0); // labels are measured at the base size, then scaled with the type
const SMALL = `12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const PAD = 8;
const MAX_LABEL_CHARS = 14;
const MAX_CELL = 32;
const WIDE = 3;

/** Layout of the heatmap for a selection state in a box: cell size, label bands, and its bitmap (one pixel a cell). */
export function layout(data, state, size) {
  const { payload, cache } = data;
  const shown = shownBlocks(payload, state, cache, false);
  const block = shown.blocks[0];
  const { rows, cols } = shown.axes;
  const nr = Math.max(rows.length, 1), nc = Math.max(cols.length, 1);
  const labelW = cache.get(`matrix-labelw|${state.units}`, () => Math.max(...shown.units.labels.map(
    (t) => size.measure(BASE.bold, truncate(t, MAX_LABEL_CHARS)))));
  // Larger type (a host's presenter mode) widens the label bands, which narrows the cells it grows with: the type
  // is chosen for the cells that the base size leaves, then kept only as large as the cells that remain.
  const fitFor = (px) => {
    const band = Math.ceil((labelW * px) / LABEL_FONT_PX) + 14;
    return [band, Math.min(MAX_CELL, (size.width - band - PAD) / nc, (size.maxHeight - band - PAD) / nr)];
  };
  const theme = size.theme || THEMES.default;
  const largest = largestLabel(size);
  // Cells short of LABEL_PITCH: the smaller type's narrower bands may leave cells that carry it, every label kept.
  const small = fitFor(FIT_LABEL_PX)[1];
  const seed = fitFor(LABEL_FONT_PX)[1] < LABEL_PITCH && small >= FIT_LABEL_PX + 3 ? small : fitFor(LABEL_FONT_PX)[1];
  const type = labelType(fitFor(labelType(seed, largest, theme.labelMin).px)[1], largest, theme.labelMin);
  const [band, fit] = fitFor(type.px);
  const left = band, top = band;
  const cell = state.zoom === "labels" ? Math.max(fit, type.pitch)
    : state.zoom === "2" || state.zoom === "4" ? fit * Number(state.zoom) : fit;
  // Square cells fit the height first: a host that gives the picture the screen (presenter mode's fillWidth) has the
  // columns widen into the width left over (a 21-token matrix took a third of a projector's width), up to WIDE times
  // a row's height; cellW is a column's width, cell a row's height.
  const cellW = size.fillWidth && state.zoom !== "2" && state.zoom !== "4"
    ? Math.max(cell, Math.min(WIDE * cell, (size.width - band - PAD) / nc)) : cell;
  const width = left + nc * cellW + PAD, height = top + nr * cell + PAD;
  // One bitmap pixel per cell, kept with the block: the canvas scales it, so zooming and scrolling never rebuild it.
  const pixels = cache.get(`matrix-pixels|${state.matrix}|${state.layer}|${state.head}|${state.units}|`
    + `${state.segments}|${state.hideSpecial}|${state.renormalize}|${state.scale}|${theme.name}`, () => {
    const data = new Uint8ClampedArray(cols.length * rows.length * 4);
    if (rows.length && cols.length) paintValues(data, block.values, attentionLUT(theme), state.scale);
    return { width: cols.length, height: rows.length, data };
  });
  return { shown, block, state, left, top, cell, cellW, type, nr, nc, width, height, pixels, theme,
    key: keyLayout(left, top, cellW, type, state.scale, size.measure),
    boxHeight: Math.min(height, size.maxHeight), locked: selectedIndex(shown, state),
    caption: describe(state, shown, payload), drawn: drawnKey(state),
    geometry: { left, top, cell, cellW, labelPx: type.px } };
}

export function paint(ctx, layout, v, focus, image = (pixels) => pixels) {
  const { left, top, cell, cellW, shown, state } = layout;
  const { rows, cols } = shown.axes;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, v.width, v.height);
  if (!rows.length || !cols.length) {
    ctx.font = layout.type.font;
    ctx.fillStyle = "#333";
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.fillText(t("Nothing to show: this filter leaves no rows or no columns (a single sentence has no B)."), PAD, 30);
    return { labels: 0 };
  }
  // The cells, clipped to the area right of and below the sticky label bands.
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, v.width - left, v.height - top);
  ctx.clip();
  ctx.translate(-v.x, -v.y);
  ctx.imageSmoothingEnabled = cell * (v.dpr || 1) < 1; // magnified cells stay crisp squares
  ctx.drawImage(image(layout.pixels), 0, 0, cols.length, rows.length, left, top, cols.length * cellW,
    rows.length * cell);
  ctx.imageSmoothingEnabled = true;
  paintMarks(ctx, layout, focus.hover);
  ctx.restore();
  return { labels: paintLabels(ctx, layout, v, focus.hover) };
}

function paintMarks(ctx, layout, hover) {
  const { left, top, cell, cellW, shown } = layout;
  const { rows, cols } = shown.axes;
  const w = cols.length * cellW, h = rows.length * cell;
  const units = shown.units;
  // Where sentence B starts, on each axis that shows both sentences.
  ctx.strokeStyle = layout.theme?.boundary ?? BOUNDARY_COLOR;
  ctx.lineWidth = 2;
  ctx.setLineDash([6, 4]);
  const rb = firstOfB(rows, units), cb = firstOfB(cols, units);
  ctx.beginPath();
  if (rb > 0) { ctx.moveTo(left, top + rb * cell); ctx.lineTo(left + w, top + rb * cell); }
  if (cb > 0) { ctx.moveTo(left + cb * cellW, top); ctx.lineTo(left + cb * cellW, top + h); }
  ctx.stroke();
  ctx.setLineDash([]);
  // The selected token's row (what it attends to) or column (what attends to it).
  const sel = layout.locked;
  if (sel) {
    ctx.strokeStyle = layout.theme?.selected ?? SELECTED_COLOR;
    ctx.lineWidth = 2.5;
    if (sel.axis === "row") ctx.strokeRect(left - 1, top + sel.index * cell - 1, w + 2, cell + 2);
    else ctx.strokeRect(left + sel.index * cellW - 1, top - 1, cellW + 2, h + 2);
  }
  if (hover && hover.row >= 0 && hover.col >= 0) {
    ctx.strokeStyle = "#111";
    ctx.lineWidth = 1.5;
    ctx.strokeRect(left + hover.col * cellW - 1, top + hover.row * cell - 1, cellW + 2, cell + 2);
  }
}

function paintLabels(ctx, layout, v, hover) {
  const { left, top, cell, cellW, shown, block, type } = layout;
  const { rows, cols } = shown.axes;
  const units = shown.units;
  const sel = layout.locked;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, left, v.height);
  ctx.fillRect(0, 0, v.width, top);
  ctx.textBaseline = "middle";
  // Rows, at the left edge.
  const [r0, r1] = visibleRange(v.y, v.height, top, cell, rows.length);
  const rowPriority = [hover?.row >= 0 ? hover.row : null, sel?.axis === "row" ? sel.index : null];
  const rowLabels = thinLabels(r0, r1, cell, type.pitch, rowPriority);
  for (const r of rowLabels) {
    const y = top + (r + 0.5) * cell - v.y;
    if (y < top) continue;
    ctx.font = rowPriority.includes(r) ? type.bold : type.font;
    ctx.fillStyle = units.special[rows[r]] ? layout.theme.special : "#111";
    ctx.textAlign = "right";
    ctx.fillText(truncate(units.labels[rows[r]], MAX_LABEL_CHARS), left - 8, y);
    if (block.flagged[r]) {
      ctx.fillStyle = "#7a5c00";
      ctx.textAlign = "left";
      ctx.fillText("\u2205", 2, y);
    }
  }
  // Columns, along the top edge, reading upwards.
  const [c0, c1] = visibleRange(v.x, v.width, left, cellW, cols.length);
  const colPriority = [hover?.col >= 0 ? hover.col : null, sel?.axis === "col" ? sel.index : null];
  const colLabels = thinLabels(c0, c1, cellW, type.pitch, colPriority);
  for (const c of colLabels) {
    const x = left + (c + 0.5) * cellW - v.x;
    if (x < left) continue;
    ctx.save();
    ctx.translate(x, top - 8);
    ctx.rotate(-Math.PI / 2);
    ctx.font = colPriority.includes(c) ? type.bold : type.font;
    ctx.fillStyle = units.special[cols[c]] ? layout.theme.special : "#111";
    ctx.textAlign = "left";
    ctx.fillText(truncate(units.labels[cols[c]], MAX_LABEL_CHARS), 0, 0);
    ctx.restore();
  }
  paintKey(ctx, layout.key, attentionLUT(layout.theme));
  return rowLabels.length + colLabels.length;
}

/**
 * The color key, in the empty corner above the row labels and left of the column labels: the first column's label
 * is a rotated line of type centered on its cell, so the key ends half a type size before that cell's middle, and
 * its name takes a line a word when one line is too wide (a long label band is narrow and tall). null: no room.
 */
export function keyLayout(left, top, cell, type, scale, measure) {
  const x = 8, y = 10, h = 12;
  const right = left + cell / 2 - type.px / 2 - 6;
  const w = Math.min(right - x, 110);
  if (w < 40) return null;
  const name = scale === "sqrt" ? "square-root scale" : "linear scale";
  const oneLine = measure(SMALL, name) <= right - x;
  let lines = oneLine ? [name] : name.split(" ");
  if (lines.some((line) => measure(SMALL, line) > right - x) || y + h + 20 + 15 * lines.length > top - 4) lines = [];
  const bottom = lines.length ? y + h + 20 + 15 * lines.length : y + h + 18;
  return { x, y, w, h, scale, lines, ticks: scale === "sqrt" && w >= 80 ? ["0", "0.25", "1"] : ["0", "1"],
    rect: { x, y, width: Math.max(w, ...lines.map((line) => measure(SMALL, line))), height: bottom - y } };
}

function paintKey(ctx, key, LUT) {
  if (!key) return;
  const { x, y, w, h, scale } = key;
  const stops = 32;
  for (let k = 0; k < stops; k++) {
    const t = k / (stops - 1);
    const value = scale === "sqrt" ? t * t : t;
    const index = Math.round((scale === "sqrt" ? Math.sqrt(value) : value) * 255) * 4;
    ctx.fillStyle = `rgb(${LUT[index]},${LUT[index + 1]},${LUT[index + 2]})`;
    ctx.fillRect(x + (k * w) / stops, y, w / stops + 0.5, h);
  }
  ctx.strokeStyle = "#999";
  ctx.lineWidth = 1;
  ctx.strokeRect(x, y, w, h);
  ctx.font = SMALL;
  ctx.fillStyle = "#333";
  ctx.textBaseline = "top";
  ctx.textAlign = "left";
  ctx.fillText("0", x, y + h + 3);
  ctx.textAlign = "center";
  if (key.ticks.length === 3) ctx.fillText("0.25", x + w / 2, y + h + 3); // narrow: its label collides
  ctx.textAlign = "right";
  ctx.fillText("1", x + w, y + h + 3);
  ctx.textAlign = "left";
  key.lines.forEach((line, k) => ctx.fillText(line, x, y + h + 20 + 15 * k));
}

/** The selected token's row (direction "from") or column ("to") among those shown, or null. */
export function selectedIndex(shown, state) {
  if (state.token === null) return null;
  const unit = shown.units.tokenUnit[state.token];
  const axis = state.direction === "from" ? "row" : "col";
  const index = (axis === "row" ? shown.axes.rows : shown.axes.cols).indexOf(unit);
  return index < 0 ? null : { axis, index };
}

/** { row, col } of the cell under (x, y); col -1 over the row labels, row -1 over the column labels; else null. */
export function hit(layout, x, y, viewport = { x: 0, y: 0 }) {
  const { left, top, cell, cellW = cell, shown } = layout;
  const row = y - viewport.y < top ? -1 : Math.floor((y - top) / cell);
  const col = x - viewport.x < left ? -1 : Math.floor((x - left) / cellW);
  if (row >= shown.axes.rows.length || col >= shown.axes.cols.length || (row < 0 && col < 0)) return null;
  return { row, col };
}

/** The keyboard's cursor (keys.mjs) walks the row labels. */
export const keyRows = (layout) => layout.shown.axes.rows.length;
export const keyTarget = (layout, i) => (i >= 0 && i < keyRows(layout) ? { row: i, col: -1 } : null);

/** A cell or a row label selects the row's token (what it attends to); a column label, what attends to it. */
export function click(layout, target) {
  const { shown } = layout;
  const pick = target.row >= 0 ? { unit: shown.axes.rows[target.row], direction: "from" }
    : { unit: shown.axes.cols[target.col], direction: "to" };
  return { patch: { token: shown.units.first[pick.unit], direction: pick.direction } };
}

export function tooltip(layout, { row, col }) {
  const { shown, block } = layout;
  const units = shown.units;
  const { rows, cols } = shown.axes;
  const name = (u) => `\u201c${units.labels[u]}\u201d (${units.mode === "words" ? "word" : "token"} ${u})`;
  if (col < 0) return [`${name(rows[row])} attends from this row`, "click to select it"];
  if (row < 0) return [`${name(cols[col])}: attention to it in this column`, "click to select it"];
  const lines = [`${name(rows[row])} \u2192 ${name(cols[col])}`];
  if (block.flagged[row]) {
    lines.push(`only ${formatShare(block.mass[row])} of this row's attention is on the tokens shown: too little`
      + " to renormalize honestly");
  } else if (block.renormalized) {
    const value = block.values[row * cols.length + col];
    lines.push(`${formatWeight(value)} of what is left (raw weight ${formatWeight(value * block.mass[row])})`);
  } else {
    lines.push(`weight ${formatWeight(block.values[row * cols.length + col])}`);
  }
  return lines;
}

export function fileName(layout) {
  const { state } = layout;
  return `matrix-layer${state.layer}-${state.head === "all" ? "mean" : `head${state.head}`}`;
}

/** Index of the first unit of sentence B on an axis that also shows sentence A, else -1. */
export function firstOfB(axis, units) {
  for (let k = 0; k < axis.length; k++) if (units.segments[axis[k]] === 1) return k > 0 ? k : -1;
  return -1;
}

function describe(state, shown, payload) {
  const parts = [];
  const heads = state.head === "all" ? t("the mean of its {n} heads", { n: payload.heads })
    : t("head {head}", { head: state.head });
  if (state.matrix === "attention") {
    parts.push(t("Layer {layer}, {heads}. Each row is a token looking at the others: its cells show how it "
      + "shares out its attention (a row adds up to 1).", { layer: state.layer, heads }));
  } else if (state.matrix === "value_weighted") {
    parts.push(t("Layer {layer}, {heads}, weighted by value (Kobayashi et al. 2020): each cell is the "
      + "attention weight times the length of what that column's token sends, rows scaled to add up to 1. It shows "
      + "what actually reaches each token: heavy attention to [SEP] shrinks here, because [SEP] sends little.",
    { layer: state.layer, heads }));
  } else {
    const label = t(shown.set.label);
    parts.push(t("{set} through layers 0\u2013{layer}: row i shows how much of each input token has flowed into "
      + "position i, multiplying the layers' attention (heads averaged, the residual connection counted as half).",
    { set: `${label[0].toUpperCase()}${label.slice(1)}`, layer: state.layer }));
  }
  const pair = Array.prototype.some.call(payload.segments, (segment) => segment === 1);
  parts.push(t("Darker = more.") + (pair ? ` ${t("Dashed line: where sentence B starts.")}` : "")
    + ` ${t("Hover a cell for its value, click it to select that row's token.")}`);
  if (state.scale === "sqrt") {
    parts.push(t("Square-root color scale: a weight of 0.25 is already half-way dark, so small weights stay visible."));
  }
  const block = shown.blocks[0];
  if (state.renormalize && block.flaggedCount) {
    parts.push(t("Rows renormalized over what is shown; {n} row(s) marked \u2205 keep under 5% of "
      + "their attention here, too little to renormalize honestly, and are grayed.", { n: block.flaggedCount }));
  } else if (state.renormalize) {
    parts.push(t("Rows renormalized: each row adds up to 1 over the columns shown."));
  } else if (state.hideSpecial || state.segments !== "all") {
    parts.push(t("Rows are not renormalized: they add up to less than 1."));
  }
  return parts.join(" ");
}
