// Overview: every head of every layer as a thumbnail of its attention matrix. Hover (or select) a head for its
// statistics in words; click a tile to open that head in the lines or matrix view.

import { headStatistics, poolMax } from "./data.mjs";
import { createSurface, el, everyFrame } from "./dom.mjs";
import { ATTENTION_STOPS, formatNumber, formatShare, makeLUT, SELECTED_COLOR, weightIndex } from "./scale.mjs";

export const NAME = "overview";
const FONT = `14px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const BOLD = `bold ${FONT}`;
const SMALL = `12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const LEFT = 64; // "layer 11"
const TOP = 24; // head numbers
const GAP = 8;
const CAPTION = 16; // the behavior label under each tile
const MIN_TILE = 44, MAX_TILE = 104;
const LUT = makeLUT(ATTENTION_STOPS);
const SHORT = { "[CLS]": "[CLS]", "[SEP]": "[SEP]", self: "self", "previous token": "prev", "next token": "next" };

/**
 * Every head pooled to size x size (largest code per block) in one atlas canvas, heads along x, layers along y.
 * Built once per payload and color scale: it reads every code of every head, which at 512 tokens is 19 M bytes.
 */
export function buildAtlas(payload, scale) {
  const T = payload.length, L = payload.layers, H = payload.heads;
  const size = Math.min(T, 64);
  const set = payload.sets.attention;
  const atlas = new ImageData(H * size, L * size);
  const colors = new Uint8Array(256); // code -> table index for this scale, so the loop below only looks up
  for (let c = 0; c < 256; c++) colors[c] = weightIndex((c + 0.5) / 255, scale);
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const pooled = poolMax(set.codes, (l * H + h) * T * T, T, size);
      for (let i = 0; i < size; i++) {
        for (let j = 0; j < size; j++) {
          const p = (((l * size + i) * H * size) + h * size + j) * 4;
          const k = colors[pooled[i * size + j]] * 4;
          atlas.data[p] = LUT[k]; atlas.data[p + 1] = LUT[k + 1]; atlas.data[p + 2] = LUT[k + 2];
          atlas.data[p + 3] = 255;
        }
      }
    }
  }
  return { image: atlas, size };
}

/** A head's statistics as sentences for a student. */
export function describeHead(stats, layer, head, T) {
  if (!stats) return [`Layer ${layer}, head ${head}.`, "This payload carries no head statistics."];
  const names = { cls: "[CLS]", sep: "[SEP]", self: "itself", previous: "the token just before",
    next: "the token just after" };
  const top = Object.keys(names).sort((a, b) => stats[b] - stats[a])[0];
  const behavior = stats.dominant === "broad" ? "spreads its attention broadly"
    : stats.dominant === "mixed" ? "has no single habit"
      : `mostly attends to ${names[top]} (${formatShare(stats[top])} of its attention)`;
  const uniform = Math.log(Math.max(T, 2));
  return [
    `Layer ${layer}, head ${head} ${behavior}.`,
    `Entropy ${formatNumber(stats.entropy)} nats: 0 would mean every token looks at exactly one token, `
      + `${formatNumber(uniform)} that it spreads evenly over all ${T}. Attended tokens are on average `
      + `${formatNumber(stats.distance, 1)} positions away.`,
    `Shares of attention: [CLS] ${formatShare(stats.cls)}, [SEP] ${formatShare(stats.sep)}, self `
      + `${formatShare(stats.self)}, previous ${formatShare(stats.previous)}, next ${formatShare(stats.next)}.`,
  ];
}

/** draw(container, payload, selection, { maxHeight, detailView }) -> { scene(), destroy() } */
export function draw(container, payload, selection, options = {}) {
  const root = el("div", { class: "bv-view bv-overview" });
  container.append(root);
  const stats = el("div", { class: "bv-stats", "aria-live": "polite" });
  root.append(stats);
  const surface = createSurface(root, { paint, onPointer, label: "Every head of every layer" });
  const caption = el("p", { class: "bv-caption" });
  root.append(caption);
  const atlasCanvas = document.createElement("canvas");
  let atlasScale = null;
  let layout = null;
  let hover = null; // { layer, head }
  let dirty = true;

  function update(state) {
    if (atlasScale !== state.scale) {
      const { image } = buildAtlas(payload, state.scale);
      atlasCanvas.width = image.width;
      atlasCanvas.height = image.height;
      atlasCanvas.getContext("2d").putImageData(image, 0, 0);
      atlasScale = state.scale;
    }
    const H = payload.heads, L = payload.layers;
    const boxWidth = root.clientWidth || 600;
    const tile = Math.max(MIN_TILE, Math.min(MAX_TILE, Math.floor((boxWidth - LEFT - GAP) / H - GAP)));
    const width = LEFT + H * (tile + GAP) + GAP;
    const height = TOP + L * (tile + CAPTION + GAP) + GAP;
    layout = { tile, width, height };
    const maxHeight = options.maxHeight ? options.maxHeight() : 600;
    surface.setSize(width, height, Math.min(height, Math.max(maxHeight, 260)));
    showStats(state);
    root.dataset.drawn = `layer=${state.layer} head=${state.head} scale=${state.scale}`;
    surface.scroller.dataset.geometry = JSON.stringify({ left: LEFT + GAP, top: TOP, tile, gap: GAP,
      rowPitch: tile + CAPTION + GAP });
    caption.textContent = "Every head of every layer, each drawn as a thumbnail of its attention matrix (rows: "
      + "attending tokens, columns: attended ones; a thumbnail pixel shows the strongest weight in its patch). "
      + "The label under a tile names the head's habit when over half its attention goes one way: [CLS], [SEP], "
      + "self, prev (the token before), next; broad means spread out, mixed means no single habit. "
      + "Hover a head for its statistics, click it to open it.";
    surface.redraw();
  }

  function showStats(state) {
    const target = hover || { layer: state.layer, head: state.head === "all" ? 0 : state.head };
    const lines = describeHead(headStatistics(payload, target.layer, target.head), target.layer, target.head,
      payload.length);
    if (!hover && state.head === "all") lines[0] = `Layer ${state.layer}: all heads selected. ${lines[0]}`;
    stats.replaceChildren(...lines.map((line, k) => el(k === 0 ? "strong" : "span", {}, line)));
  }

  const tileOrigin = (layer, head) => [LEFT + GAP + head * (layout.tile + GAP),
    TOP + layer * (layout.tile + CAPTION + GAP)];

  function paint(ctx, v) {
    if (!layout) return;
    const state = selection.get();
    const { tile } = layout;
    const size = Math.min(payload.length, 64);
    ctx.save();
    ctx.translate(-v.x, -v.y);
    ctx.imageSmoothingEnabled = false;
    for (let l = 0; l < payload.layers; l++) {
      for (let h = 0; h < payload.heads; h++) {
        const [x, y] = tileOrigin(l, h);
        if (x > v.x + v.width || x + tile < v.x || y > v.y + v.height || y + tile + CAPTION < v.y) continue;
        ctx.drawImage(atlasCanvas, h * size, l * size, size, size, x, y, tile, tile);
        ctx.strokeStyle = "#bbb";
        ctx.lineWidth = 1;
        ctx.strokeRect(x - 0.5, y - 0.5, tile + 1, tile + 1);
        const label = payload.dominant ? SHORT[payload.dominant[l][h]] || payload.dominant[l][h] : "";
        ctx.font = SMALL;
        ctx.fillStyle = label === "broad" || label === "mixed" ? "#777" : "#123a66";
        ctx.textAlign = "center";
        ctx.textBaseline = "top";
        ctx.fillText(label, x + tile / 2, y + tile + 4);
      }
    }
    ctx.imageSmoothingEnabled = true;
    const mark = (layer, head, color, width) => {
      const [x, y] = tileOrigin(layer, head);
      ctx.strokeStyle = color;
      ctx.lineWidth = width;
      ctx.strokeRect(x - 3, y - 3, tile + 6, tile + 6);
    };
    if (state.head === "all") for (let h = 0; h < payload.heads; h++) mark(state.layer, h, SELECTED_COLOR, 2);
    else mark(state.layer, state.head, SELECTED_COLOR, 3.5);
    if (hover) mark(hover.layer, hover.head, "#111", 2);
    ctx.restore();
    // Sticky axis labels: layers on the left, heads on top.
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, LEFT, v.height);
    ctx.fillRect(0, 0, v.width, TOP);
    ctx.fillStyle = "#222";
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (let l = 0; l < payload.layers; l++) {
      const y = tileOrigin(l, 0)[1] + tile / 2 - v.y;
      if (y < TOP || y > v.height) continue;
      ctx.font = l === state.layer ? BOLD : FONT;
      ctx.fillText(`layer ${l}`, 6, y);
    }
    ctx.textAlign = "center";
    for (let h = 0; h < payload.heads; h++) {
      const x = tileOrigin(0, h)[0] + tile / 2 - v.x;
      if (x < LEFT || x > v.width) continue;
      ctx.font = h === state.head ? BOLD : FONT;
      ctx.fillText(h === 0 ? "head 0" : String(h), x, TOP / 2);
    }
  }

  function hit(p) {
    if (!layout || p.vx < LEFT || p.vy < TOP) return null;
    const head = Math.floor((p.x - LEFT - GAP / 2) / (layout.tile + GAP));
    const layer = Math.floor((p.y - TOP + GAP / 2) / (layout.tile + CAPTION + GAP));
    if (head < 0 || head >= payload.heads || layer < 0 || layer >= payload.layers) return null;
    return { layer, head };
  }

  function onPointer(event, p) {
    const h = event.type === "pointerleave" ? null : hit(p);
    if (event.type === "click") {
      if (h) selection.set({ layer: h.layer, head: h.head, view: options.detailView ? options.detailView() : "lines" });
      return;
    }
    if (JSON.stringify(h) !== JSON.stringify(hover)) {
      hover = h;
      showStats(selection.get());
      surface.redraw();
    }
  }

  const render = (state) => {
    if (state.view !== NAME) { dirty = true; return; }
    dirty = false;
    update(state);
  };
  const unsubscribe = selection.subscribe(everyFrame(render));
  const resize = new ResizeObserver(() => { if (selection.get().view === NAME && !dirty) update(selection.get()); });
  resize.observe(root);
  render(selection.get());

  return {
    name: NAME,
    refresh: () => render(selection.get()),
    scene() {
      const v = surface.viewport();
      return { width: v.width, height: v.height, paint: (ctx) => paint(ctx, v), bitmap: true, name: "overview" };
    },
    destroy() { unsubscribe(); resize.disconnect(); root.remove(); },
  };
}
