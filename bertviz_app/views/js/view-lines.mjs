// Lines view: the attending tokens on the left, the attended tokens on the right, one line per pair, darker for
// more attention. Hover a token to see only its lines, click to keep it; with all heads, each head its color.

import { createCache, shownBlocks } from "./data.mjs";
import { drawnKey } from "./selection.mjs";
import { createSurface, el, everyFrame, measureText } from "./dom.mjs";
import { LABEL_FONT_PX, LABEL_PITCH, pitchFor, thinLabels, truncate, visibleRange, weightFloor } from "./layout.mjs";
import { formatWeight, headColor, SELECTED_COLOR, weightIndex } from "./scale.mjs";

export const NAME = "lines";
const FONT = `${LABEL_FONT_PX}px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const BOLD = `bold ${FONT}`;
const SMALL = `13px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const HEADER = 34; // the sticky band with the column titles and, for all heads, the color key
const TOP = HEADER + 10; // the first row's label clear of the band
const PAD = 8;
const GUTTER = 10; // between a label and the lines
const MAX_LABEL_CHARS = 18;
const LINE_BUDGET = 8000; // lines drawn when no token is active: more is a gray blur and slow at 512 tokens
const ROLLOUT_COLOR = "#08519c";
const MIN_WEIGHT = 0.01; // lighter lines are invisible anyway, and there are T x T of them
const IDLE_WEIGHT = 0.05; // with no token active, only links this strong: the rest is a gray mesh

/** draw(container, payload, selection, { maxHeight }) -> { render, scene(), destroy() } */
export function draw(container, payload, selection, options = {}) {
  const root = el("div", { class: "bv-view bv-lines" });
  container.append(root);
  const surface = createSurface(root, { paint, onPointer, label: "Attention lines between tokens" });
  const caption = el("p", { class: "bv-caption" });
  root.append(caption);
  const cache = createCache();
  let shown = null; // shownBlocks for the current state
  let layout = null;
  let hover = null; // { side: "left" | "right", index } into the shown rows / columns
  let dirty = true;

  function labelWidth(units) {
    return cache.get(`labelw|${units.mode}`, () => {
      let w = 0;
      for (const label of units.labels) w = Math.max(w, measureText(BOLD, truncate(label, MAX_LABEL_CHARS)));
      return Math.ceil(w);
    });
  }

  function update(state) {
    shown = shownBlocks(payload, state, cache, true);
    const { units, axes } = shown;
    const n = Math.max(axes.rows.length, axes.cols.length, 1);
    const maxHeight = options.maxHeight ? options.maxHeight() : 600;
    const labelW = labelWidth(units);
    const pitch = pitchFor(n, maxHeight - TOP - PAD, state.zoom, { min: 1, max: 26 });
    const width = Math.max(root.clientWidth || 600, 2 * (PAD + labelW + GUTTER) + 120);
    const height = TOP + n * pitch + PAD;
    layout = { n, pitch, labelW, width, height, xL: PAD + labelW + GUTTER, xR: width - PAD - labelW - GUTTER };
    surface.setSize(width, height, Math.min(height, maxHeight));
    caption.textContent = describe(state, shown, payload);
    root.dataset.drawn = drawnKey(state);
    // Where the rows are, for automation (tests click tokens on the canvas with it).
    surface.scroller.dataset.geometry = JSON.stringify({ top: TOP, pitch, left: layout.xL, right: layout.xR });
    surface.redraw();
  }

  const rowY = (index) => TOP + (index + 0.5) * layout.pitch;

  /** The active side and index: the hovered token, else the selected one (if the filters still show it). */
  function active() {
    if (hover) return hover;
    const s = selection.get();
    if (s.token === null || !shown) return null;
    const unit = shown.units.tokenUnit[s.token];
    const side = s.direction === "from" ? "left" : "right";
    const index = (side === "left" ? shown.axes.rows : shown.axes.cols).indexOf(unit);
    return index < 0 ? null : { side, index, selected: true };
  }

  function paint(ctx, v) {
    if (!shown || !layout) return;
    const state = selection.get();
    const { rows, cols } = shown.axes;
    const { pitch, xL, xR } = layout;
    const act = active();
    const [r0, r1] = visibleRange(v.y, v.height, TOP, pitch, Math.max(rows.length, cols.length));
    ctx.save();
    ctx.translate(-v.x, -v.y);
    ctx.lineCap = "round";
    // Lines: only those that cross the visible part; alpha in 16 steps so each step is one path to stroke.
    for (const block of shown.blocks) {
      const color = block.head === null ? ROLLOUT_COLOR : headColor(block.head);
      const nc = cols.length;
      const buckets = Array.from({ length: 16 }, () => []);
      // A line's opacity follows the color scale: its weight, or (square root) weak lines a little stronger.
      const add = (r, c, w) => {
        if (!(w >= MIN_WEIGHT)) return;
        const y1 = rowY(r), y2 = rowY(c);
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
      ctx.strokeStyle = color;
      ctx.lineWidth = act ? 2.5 : 2;
      buckets.forEach((ys, k) => {
        if (!ys.length) return;
        ctx.globalAlpha = Math.max(0.1, (k + 0.5) / 16);
        ctx.beginPath();
        for (let i = 0; i < ys.length; i += 2) { ctx.moveTo(xL, ys[i]); ctx.lineTo(xR, ys[i + 1]); }
        ctx.stroke();
      });
      ctx.globalAlpha = 1;
    }
    paintLabels(ctx, v, r0, r1, act, state);
    ctx.restore();
    paintHeader(ctx, v, state);
  }

  function paintLabels(ctx, v, r0, r1, act, state) {
    const { rows, cols } = shown.axes;
    const { pitch, labelW, xL, xR } = layout;
    const units = shown.units;
    const nc = cols.length;
    const gap = LABEL_PITCH;
    // Weight of each label on the far side of the active token, summed over the shown heads' mean.
    const weights = new Float32Array(act ? (act.side === "left" ? nc : rows.length) : 0);
    if (act) {
      for (const b of shown.blocks) {
        for (let k = 0; k < weights.length; k++) {
          const value = act.side === "left" ? b.values[act.index * nc + k] : b.values[k * nc + act.index];
          weights[k] += (Number.isNaN(value) ? 0 : value) / shown.blocks.length;
        }
      }
    }
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
      const shownLabels = thinLabels(r0, Math.min(r1, axis.length - 1), pitch, gap, priority);
      count += shownLabels.length;
      for (const i of shownLabels) {
        const unit = axis[i];
        const y = rowY(i);
        const text = truncate(units.labels[unit], MAX_LABEL_CHARS);
        const isActive = isActiveSide && act.index === i;
        const w = act && !isActiveSide ? weights[i] : 0;
        const x0 = side === "left" ? PAD : layout.width - PAD - labelW;
        const boxH = Math.min(Math.max(pitch, LABEL_PITCH), LABEL_PITCH);
        if (isActive) {
          ctx.fillStyle = SELECTED_COLOR;
          ctx.globalAlpha = act.selected ? 0.35 : 0.22;
          ctx.fillRect(x0 - 4, y - boxH / 2, labelW + 8, boxH);
          ctx.globalAlpha = 1;
        } else if (w > 0) { // bertviz's cue: the attended word lights up with its weight
          ctx.fillStyle = "#2171b5";
          ctx.globalAlpha = Math.min(0.6, Math.sqrt(w) * 0.6);
          ctx.fillRect(x0 - 4, y - boxH / 2, labelW + 8, boxH);
          ctx.globalAlpha = 1;
        }
        ctx.font = isActive ? BOLD : FONT;
        ctx.fillStyle = units.special[unit] ? "#6b6b6b" : "#111";
        ctx.textAlign = side === "left" ? "right" : "left";
        ctx.fillText(text, side === "left" ? xL - GUTTER : xR + GUTTER, y);
        if (w >= 0.01 && pitch >= LABEL_PITCH - 1) {
          ctx.font = SMALL;
          ctx.fillStyle = "#0b3d75";
          ctx.textAlign = side === "left" ? "left" : "right";
          ctx.fillText(formatWeight(w), side === "left" ? xL + 4 : xR - 4, y);
        }
      }
    }
    root.dataset.labels = String(count);
    if (shown.blocks[0].flaggedCount && shown.blocks[0].renormalized) {
      ctx.font = SMALL;
      ctx.fillStyle = "#7a5c00";
      ctx.textAlign = "left";
      for (let r = r0; r <= Math.min(r1, rows.length - 1); r++) {
        if (shown.blocks[0].flagged[r]) ctx.fillText("\u2205", xL + 2, rowY(r)); // no lines: too little mass left
      }
    }
  }

  function paintHeader(ctx, v, state) {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, v.width, HEADER);
    ctx.font = SMALL;
    ctx.fillStyle = "#444";
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    ctx.fillText("attending token", PAD - v.x, HEADER / 2);
    ctx.textAlign = "right";
    ctx.fillText("attended token", layout.width - PAD - v.x, HEADER / 2);
    if (state.head === "all" && shown.set.perHead) {
      const keys = legendKeys();
      for (const k of keys) {
        ctx.fillStyle = headColor(k.head);
        ctx.fillRect(k.x - v.x, HEADER / 2 - 7, 14, 14);
        ctx.fillStyle = "#222";
        ctx.textAlign = "left";
        ctx.fillText(String(k.head), k.x + 17 - v.x, HEADER / 2);
      }
    }
    ctx.fillStyle = "#ddd";
    ctx.fillRect(0, HEADER - 1, v.width, 1);
  }

  /** Color key of the heads, centerd over the lines; each entry is also a button for that head. */
  function legendKeys() {
    const step = 36;
    const total = payload.heads * step;
    const start = Math.max(layout.xL, (layout.xL + layout.xR - total) / 2);
    return Array.from({ length: payload.heads }, (_, head) => ({ head, x: start + head * step, w: step - 4 }));
  }

  function hit(p) {
    if (!layout || p.vy < HEADER) return null;
    const { rows, cols } = shown.axes;
    const index = Math.floor((p.y - TOP) / layout.pitch);
    const side = p.x < layout.width / 2 ? "left" : "right";
    const axis = side === "left" ? rows : cols;
    return index >= 0 && index < axis.length ? { side, index } : null;
  }

  function onPointer(event, p) {
    if (event.type === "pointerleave") {
      if (hover) { hover = null; surface.redraw(); }
      return;
    }
    if (event.type === "click" && p.vy < HEADER && selection.get().head === "all") {
      const key = legendKeys().find((k) => p.x >= k.x && p.x < k.x + k.w);
      if (key) selection.set({ head: key.head });
      return;
    }
    const h = hit(p);
    if (event.type === "pointermove") {
      if (JSON.stringify(h) !== JSON.stringify(hover)) { hover = h; surface.redraw(); }
      return;
    }
    if (event.type === "click" && h) {
      const unit = (h.side === "left" ? shown.axes.rows : shown.axes.cols)[h.index];
      const token = shown.units.first[unit];
      const direction = h.side === "left" ? "from" : "to";
      const s = selection.get();
      if (s.token !== null && shown.units.tokenUnit[s.token] === unit && s.direction === direction) {
        selection.set({ token: null });
      } else {
        selection.set({ token, direction });
      }
      hover = null;
    }
  }

  const render = (state) => {
    if (state.view !== NAME) { dirty = true; return; }
    dirty = false;
    update(state);
  };
  const unsubscribe = selection.subscribe(everyFrame((state) => render(state)));
  const resize = new ResizeObserver(() => { if (selection.get().view === NAME && !dirty) update(selection.get()); });
  resize.observe(root);
  render(selection.get());

  return {
    name: NAME,
    refresh: () => render(selection.get()),
    /** What is on screen now, for the PNG and SVG exports. */
    scene() {
      const v = surface.viewport();
      return { width: v.width, height: v.height, paint: (ctx) => paint(ctx, v), name: fileStem(selection.get()) };
    },
    destroy() { unsubscribe(); resize.disconnect(); root.remove(); },
  };
}

function fileStem(state) {
  return `lines-layer${state.layer}-${state.head === "all" ? "all-heads" : `head${state.head}`}`;
}

function describe(state, shown, payload) {
  const heads = state.head === "all"
    ? `all ${payload.heads} heads (one color each; click a color in the key to pick that head)`
    : `head ${state.head}`;
  const what = state.matrix === "attention" ? `layer ${state.layer}, ${heads}`
    : state.matrix === "value_weighted" ? `layer ${state.layer}, ${heads}, weighted by value (the attention weight `
      + "times the length of what the token sends, each row scaled to add up to 1: a token that gets much attention "
      + "but sends little, as [SEP] often does, fades)"
      : `${shown.set.label} through layers 0\u2013${state.layer} (how much each input token has flowed into each `
        + "position, heads averaged, the residual connection counted as half)";
  const parts = [`Each line joins a token on the left to a token it attends to on the right, in ${what}; the more `
    + "attention, the darker the line.",
  "Until you hover or select a token, lines under 0.05 are left out; hover a token to see all its lines, click it "
    + "to keep them (click again to let go)."];
  if (state.scale === "sqrt") {
    parts.push("Square-root shading: a line of weight 0.25 is already half dark, so weak links stay visible.");
  }
  if (state.units === "words") {
    parts.push("Words: attention to a word is summed over its pieces, attention from a word averaged over them.");
  }
  const flagged = shown.blocks[0].flaggedCount;
  if (state.renormalize && flagged) {
    parts.push(`\u2205 marks ${flagged} row(s) with under 5% of their attention on the tokens shown: too little to `
      + "renormalize honestly, so they get no lines.");
  } else if (state.renormalize) {
    parts.push("Rows are renormalized: each token's lines add up to 1 over the tokens shown.");
  }
  return parts.join(" ");
}
