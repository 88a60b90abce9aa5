// Lines view: the attending tokens on the left, the attended tokens on the right, one line per pair, darker for
// more attention. Hover a token to see only its lines, click to keep it; with all heads, each head its color.
// Pure layout / paint / hit functions; view-shell.mjs mounts them.

import { shownBlocks } from "./data.mjs";
import { drawnKey } from "./selection.mjs";
import { LABEL_FONT_PX, labelType, pitchFor, thinLabels, truncate, visibleRange, weightFloor } from "./layout.mjs";
import { formatWeight, headStyle, SELECTED_COLOR, weightIndex } from "./scale.mjs";
import { largestLabel, THEMES } from "./theme.mjs";
import { t } from "./i18n.mjs";

export const NAME = "lines";
export const LABEL = "Attention lines between tokens";
const BOLD = labelType(0).bold; // labels are measured at the base size, then scaled with the type
const SMALL = `13px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const HEADER = 34; // the sticky band with the column titles and, for all heads, the color key
const TOP = HEADER + 10; // the first row's label clear of the band
const PAD = 8;
const GUTTER = 10; // between a label and the lines
const MAX_LABEL_CHARS = 18;
const LINE_BUDGET = 8000; // lines drawn when no token is active: more is a gray blur and slow at 512 tokens
// One head, a layer's mean and rollout are one color: a head's number is not a reason to change it (head 7's hue
// in the all-heads key is gray). Only "all heads" colors lines by head, with its key.
export const LINE_COLOR = "#08519c";
const MIN_WEIGHT = 0.01; // lighter lines are invisible anyway, and there are T x T of them
const IDLE_WEIGHT = 0.05; // with no token active, only links this strong: the rest is a gray mesh
// The gap the lines cross. Stretched over a 1280 px box (~1,100 px) lines from one token to its neighbors are
// nearly flat and fan out by a few degrees; bertviz keeps its columns a few hundred pixels apart. At 360 px a line
// to a token 10 rows (260 px) away still climbs 36 degrees, so the fan stays readable, and the color key of 12
// heads (432 px) still fits over it with the labels; narrower boxes (a phone) take what is left.
export const MAX_GAP = 360;
const MIN_GAP = 120;
const KEY_STEP = 36; // the all-heads color key: one entry per head
const MIN_KEY_STEP = 28; // a swatch of 10 px and "11" still apart
const TITLE_ROOM = 120; // a column's title in the band, and a gap

/** Layout of the lines for a selection state in a box of size.width x size.maxHeight. */
export function layout(data, state, size) {
  const { payload, cache } = data;
  const shown = shownBlocks(payload, state, cache, true);
  const { units, axes } = shown;
  const n = Math.max(axes.rows.length, axes.cols.length, 1);
  const labelW15 = cache.get(`lines-labelw|${units.mode}`, () => {
    let w = 0;
    for (const label of units.labels) w = Math.max(w, size.measure(BOLD, truncate(label, MAX_LABEL_CHARS)));
    return w;
  });
  const theme = size.theme || THEMES.default;
  const largest = largestLabel(size);
  const pitch = pitchFor(n, size.maxHeight - TOP - PAD, state.zoom, { min: 1, max: Math.max(26, largest + 3) });
  const type = labelType(pitch, largest, theme.labelMin);
  const labelW = Math.ceil((labelW15 * type.px) / LABEL_FONT_PX);
  const side = PAD + labelW + GUTTER; // a label column and its margins
  const gap = Math.max(MIN_GAP, Math.min(MAX_GAP, size.width - 2 * side));
  const width = Math.max(size.width, 2 * side + gap);
  const x0 = (width - 2 * side - gap) / 2; // the picture sits in the middle of a wide box
  const xL = x0 + side, xR = xL + gap;
  const height = TOP + n * pitch + PAD;
  let locked = null;
  if (state.token !== null) {
    const unit = units.tokenUnit[state.token];
    const where = state.direction === "from" ? "left" : "right";
    const index = (where === "left" ? axes.rows : axes.cols).indexOf(unit);
    if (index >= 0) locked = { side: where, index };
  }
  return {
    shown, state, heads: payload.heads, n, pitch, type, labelW, width, height, x0, xL, xR, locked, theme,
    boxHeight: Math.min(height, size.maxHeight),
    caption: describe(state, shown, payload),
    drawn: drawnKey(state),
    // Where the rows are, for automation (tests click tokens on the canvas with it).
    geometry: { top: TOP, pitch, left: xL, right: xR, labelPx: type.px },
  };
}

/** The color key of the heads, centered over the lines between the columns' titles; each entry is also a button
 * for that head. Where it would run over the right title (a box not much wider than the picture, a phone), the key
 * has the band alone, its entries closer (the caption says which side attends). */
export function legendKeys(layout) {
  const { heads, x0, width } = layout;
  const start = Math.max(x0 + PAD + TITLE_ROOM, (layout.xL + layout.xR - heads * KEY_STEP) / 2);
  if (start + heads * KEY_STEP <= width - x0 - PAD - TITLE_ROOM) {
    return Array.from({ length: heads }, (_, head) => ({ head, x: start + head * KEY_STEP, w: KEY_STEP - 4,
      swatch: 14 }));
  }
  const step = Math.max(MIN_KEY_STEP, Math.min(KEY_STEP, (width - 2 * PAD) / heads));
  const left = Math.max(PAD, (width - heads * step) / 2);
  return Array.from({ length: heads }, (_, head) => ({ head, x: left + head * step, w: step - 4, swatch: 10,
    alone: true }));
}

/** The color and dash (in line widths) of a block's lines: by head only when every head of the layer is shown. */
export function lineStyle(state, block, theme) {
  return state.head === "all" && block.head !== null ? headStyle(block.head, theme) : { color: LINE_COLOR, dash: [] };
}

const rowY = (layout, index) => TOP + (index + 0.5) * layout.pitch;

/** A newly selected token scrolls into sight (centred) when its row is out of it: a point clicked in the corpus
 * views selects a token of a long sentence, which could lie far below the box's first rows. The same token does not
 * move the box (the visitor may have scrolled it). */
export function reveal(layout, before, v) {
  const now = layout.locked;
  if (!now || (before?.locked && before.locked.side === now.side && before.locked.index === now.index)) return null;
  const y = TOP + now.index * layout.pitch;
  if (y >= v.y + HEADER && y + layout.pitch <= v.y + v.height) return null;
  return { x: v.x, y: Math.max(0, y - HEADER - (v.height - HEADER) / 2) };
}

export function paint(ctx, layout, v, focus) {
  const { shown, state, pitch, xL, xR } = layout;
  const theme = layout.theme || THEMES.default;
  const { rows, cols } = shown.axes;
  const act = focus.active;
  const [r0, r1] = visibleRange(v.y, v.height, TOP, pitch, Math.max(rows.length, cols.length));
  ctx.save();
  ctx.translate(-v.x, -v.y);
  ctx.lineCap = "round";
  // Lines: only those that cross the visible part; alpha in 16 steps so each step is one path to stroke.
  for (const block of shown.blocks) {
    const nc = cols.length;
    const buckets = Array.from({ length: 16 }, () => []);
    // A line's opacity follows the color scale: its weight, or (square root) weak lines a little stronger.
    const add = (r, c, w) => {
      if (!(w >= MIN_WEIGHT)) return;
      const y1 = rowY(layout, r), y2 = rowY(layout, c);
      if (Math.max(y1, y2) < v.y + HEADER || Math.min(y1, y2) > v.y + v.height) return;
      buckets[Math.min(15, Math.floor(weightIndex(w, state.scale) / 16))].push(y1, y2);
    };
    if (act && act.side === "left") {
      for (let c = 0; c < nc; c++) add(act.index, c, block.values[act.index * nc + c]);
    } else if (act) {
      for (let r = 0; r < rows.length; r++) add(r, act.index, block.values[r * nc + act.index]);
    } else {
      const floor = weightFloor(block.values, LINE_BUDGET / shown.blocks.length, IDLE_WEIGHT);
      for (let k = 0; k < block.values.length; k++) {
        if (block.values[k] >= floor) add(Math.floor(k / nc), k % nc, block.values[k]);
      }
    }
    const style = lineStyle(state, block, theme);
    ctx.strokeStyle = style.color;
    ctx.lineWidth = act ? theme.activeLineWidth : theme.lineWidth;
    ctx.setLineDash(style.dash.map((d) => d * ctx.lineWidth));
    buckets.forEach((ys, k) => {
      if (!ys.length) return;
      ctx.globalAlpha = Math.max(theme.alphaFloor, (k + 0.5) / 16); // a projector loses the faintest lines
      ctx.beginPath();
      for (let i = 0; i < ys.length; i += 2) { ctx.moveTo(xL, ys[i]); ctx.lineTo(xR, ys[i + 1]); }
      ctx.stroke();
    });
    ctx.globalAlpha = 1;
    ctx.setLineDash([]);
  }
  const locked = act && focus.locked && act.side === focus.locked.side && act.index === focus.locked.index;
  const labels = paintLabels(ctx, layout, r0, r1, act, locked);
  ctx.restore();
  paintHeader(ctx, layout, v);
  return { labels };
}

/** The far side's weights of the active token (the shown heads' mean), for its labels' shading and numbers. */
export function farWeights(layout, act) {
  const { shown } = layout;
  const { rows, cols } = shown.axes;
  const nc = cols.length;
  const weights = new Float32Array(act ? (act.side === "left" ? nc : rows.length) : 0);
  if (!act) return weights;
  for (const b of shown.blocks) {
    for (let k = 0; k < weights.length; k++) {
      const value = act.side === "left" ? b.values[act.index * nc + k] : b.values[k * nc + act.index];
      weights[k] += (Number.isNaN(value) ? 0 : value) / shown.blocks.length;
    }
  }
  return weights;
}

function paintLabels(ctx, layout, r0, r1, act, locked) {
  const { shown, pitch, labelW, xL, xR, x0, type } = layout;
  const { rows, cols } = shown.axes;
  const units = shown.units;
  const weights = farWeights(layout, act);
  const strongest = [];
  if (act) { // the far side's strongest targets keep their labels however thin the rows are
    const order = Array.from(weights.keys()).sort((a, b) => weights[b] - weights[a]);
    for (const k of order.slice(0, 5)) if (weights[k] >= 0.05) strongest.push(k);
  }
  ctx.textBaseline = "middle";
  let count = 0;
  for (const side of ["left", "right"]) {
    const axis = side === "left" ? rows : cols;
    const isActiveSide = act && act.side === side;
    const priority = isActiveSide ? [act.index] : act ? strongest : [];
    const shownLabels = thinLabels(r0, Math.min(r1, axis.length - 1), pitch, type.pitch, priority);
    count += shownLabels.length;
    for (const i of shownLabels) {
      const unit = axis[i];
      const y = rowY(layout, i);
      const text = truncate(units.labels[unit], MAX_LABEL_CHARS);
      const isActive = isActiveSide && act.index === i;
      const w = act && !isActiveSide ? weights[i] : 0;
      const boxX = side === "left" ? x0 + PAD : xR + GUTTER;
      const boxH = type.pitch;
      if (isActive) {
        ctx.fillStyle = layout.theme?.selected ?? SELECTED_COLOR;
        ctx.globalAlpha = locked ? 0.35 : 0.22;
        ctx.fillRect(boxX - 4, y - boxH / 2, labelW + 8, boxH);
        ctx.globalAlpha = 1;
      } else if (w > 0) { // bertviz's cue: the attended word lights up with its weight
        ctx.fillStyle = "#2171b5";
        ctx.globalAlpha = Math.min(0.6, Math.sqrt(w) * 0.6);
        ctx.fillRect(boxX - 4, y - boxH / 2, labelW + 8, boxH);
        ctx.globalAlpha = 1;
      }
      ctx.font = isActive ? type.bold : type.font;
      ctx.fillStyle = units.special[unit] ? (layout.theme || THEMES.default).special : "#111";
      ctx.textAlign = side === "left" ? "right" : "left";
      ctx.fillText(text, side === "left" ? xL - GUTTER : xR + GUTTER, y);
      if (w >= 0.01 && pitch >= type.pitch - 1) {
        ctx.font = SMALL;
        ctx.fillStyle = "#0b3d75";
        ctx.textAlign = side === "left" ? "left" : "right";
        ctx.fillText(formatWeight(w), side === "left" ? xL + 4 : xR - 4, y);
      }
    }
  }
  if (shown.blocks[0].flaggedCount && shown.blocks[0].renormalized) {
    ctx.font = SMALL;
    ctx.fillStyle = "#7a5c00";
    ctx.textAlign = "left";
    for (let r = r0; r <= Math.min(r1, rows.length - 1); r++) {
      if (shown.blocks[0].flagged[r]) ctx.fillText("\u2205", xL + 2, rowY(layout, r)); // no lines: too little left
    }
  }
  return count;
}

function paintHeader(ctx, layout, v) {
  const { state, shown, x0, width } = layout;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, v.width, HEADER);
  ctx.font = SMALL;
  ctx.fillStyle = "#444";
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const keys = state.head === "all" && shown.set.perHead ? legendKeys(layout) : [];
  if (!keys[0]?.alone) {
    ctx.fillText(t("attending token"), x0 + PAD - v.x, HEADER / 2);
    ctx.textAlign = "right";
    ctx.fillText(t("attended token"), width - x0 - PAD - v.x, HEADER / 2);
  }
  if (keys.length) {
    const theme = layout.theme || THEMES.default;
    for (const k of keys) {
      const style = headStyle(k.head, theme);
      if (theme.headMarks) { // a sample of the head's line: its dash is half of what tells it apart
        ctx.strokeStyle = style.color;
        ctx.lineWidth = 2;
        ctx.lineCap = "round";
        ctx.setLineDash(style.dash.map((d) => d * 2));
        ctx.beginPath();
        ctx.moveTo(k.x - v.x + 1, HEADER / 2);
        ctx.lineTo(k.x - v.x + k.swatch, HEADER / 2);
        ctx.stroke();
        ctx.setLineDash([]);
      } else {
        ctx.fillStyle = style.color;
        ctx.fillRect(k.x - v.x, HEADER / 2 - k.swatch / 2, k.swatch, k.swatch);
      }
      ctx.fillStyle = "#222";
      ctx.textAlign = "left";
      ctx.fillText(String(k.head), k.x + k.swatch + 3 - v.x, HEADER / 2);
    }
  }
  ctx.fillStyle = "#ddd";
  ctx.fillRect(0, HEADER - 1, v.width, 1);
}

/**
 * What is at picture point (x, y): { side, index } for a token row (left or right column), { legend: head } for
 * an entry of the all-heads key in the sticky band, else null.
 */
export function hit(layout, x, y, viewport = { x: 0, y: 0 }) {
  const { shown, state } = layout;
  if (y - viewport.y < HEADER) {
    if (state.head !== "all" || !shown.set.perHead) return null;
    const key = legendKeys(layout).find((k) => x >= k.x && x < k.x + k.w);
    return key ? { legend: key.head, hover: false } : null;
  }
  const index = Math.floor((y - TOP) / layout.pitch);
  const side = x < layout.width / 2 ? "left" : "right";
  const axis = side === "left" ? shown.axes.rows : shown.axes.cols;
  return index >= 0 && index < axis.length ? { side, index } : null;
}

/** The keyboard's cursor (keys.mjs) walks the left column: the tokens as they attend. */
export const keyRows = (layout) => layout.shown.axes.rows.length;
export const keyTarget = (layout, i) => (i >= 0 && i < keyRows(layout) ? { side: "left", index: i } : null);

/** A click on a token keeps it (what it attends to on the left, what attends to it on the right); again lets go. */
export function click(layout, target, state) {
  if (target.legend !== undefined) return { patch: { head: target.legend } };
  const { shown } = layout;
  const unit = (target.side === "left" ? shown.axes.rows : shown.axes.cols)[target.index];
  const direction = target.side === "left" ? "from" : "to";
  if (state.token !== null && shown.units.tokenUnit[state.token] === unit && state.direction === direction) {
    return { patch: { token: null } };
  }
  return { patch: { token: shown.units.first[unit], direction } };
}

export function fileName(layout) {
  const { state } = layout;
  return `lines-layer${state.layer}-${state.head === "all" ? "all-heads" : `head${state.head}`}`;
}

function describe(state, shown, payload) {
  const heads = state.head === "all"
    ? t("all {n} heads (each its own color, or color and dash; click a head in the key to pick it)", { n: payload.heads })
    : t("head {head}", { head: state.head });
  const what = state.matrix === "attention" ? t("layer {layer}, {heads}", { layer: state.layer, heads })
    : state.matrix === "value_weighted" ? t("layer {layer}, {heads}, weighted by value (the attention weight "
      + "times the length of what the token sends, each row scaled to add up to 1: a token that gets much attention "
      + "but sends little, as [SEP] often does, fades)", { layer: state.layer, heads })
      : t("{set} through layers 0\u2013{layer} (how much each input token has flowed into each position, heads "
        + "averaged, the residual connection counted as half)", { set: t(shown.set.label), layer: state.layer });
  const parts = [t("Each line joins a token on the left to a token it attends to on the right, in {what}; the more "
    + "attention, the darker the line.", { what }),
  t("Until you hover or select a token, lines under 0.05 are left out; hover a token to see all its lines, click it "
    + "to keep them (click again to let go).")];
  if (state.scale === "sqrt") {
    parts.push(t("Square-root shading: a line of weight 0.25 is already half dark, so weak links stay visible."));
  }
  if (state.units === "words") {
    parts.push(t("Words: attention to a word is summed over its pieces, attention from a word averaged over them."));
  }
  const flagged = shown.blocks[0].flaggedCount;
  if (state.renormalize && flagged) {
    parts.push(t("\u2205 marks {n} row(s) with under 5% of their attention on the tokens shown: too little to "
      + "renormalize honestly, so they get no lines.", { n: flagged }));
  } else if (state.renormalize) {
    parts.push(t("Rows are renormalized: each token's lines add up to 1 over the tokens shown."));
  }
  return parts.join(" ");
}
