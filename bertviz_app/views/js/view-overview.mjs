// Overview: every head of every layer as a thumbnail of its attention matrix. Hover (or select) a head for its
// statistics in words; click a tile to open that head in the lines or matrix view. The arrow keys move a cursor
// over the tiles and Enter acts as a click.
//
// With a host's `onSilence` (main.mjs), the pane also picks heads to silence: while "Pick heads to silence" is on,
// a click on a tile toggles that head in the selection's `silenced` instead of opening it, and a click on a layer
// label or a head number toggles the whole row or column; "Silence N heads and predict" hands the picks to the
// host, which runs the forward pass without them and shows the predictions elsewhere on the page.
// Pure layout / paint / hit functions; view-shell.mjs mounts them, with the statistics, the silence tools and the
// keyboard as the view's extras.

import { headStatistics, poolMax } from "./data.mjs";
import { el } from "./dom.mjs";
import { HEADS } from "./heads.mjs";
import { formatNumber, formatShare, SELECTED_COLOR, weightIndex } from "./scale.mjs";
import { attentionLUT, THEMES } from "./theme.mjs";
import { isPicked, toggleHeads } from "./selection.mjs";
import { t as tr } from "./i18n.mjs";

export const NAME = "overview";
export const LABEL = "Every head of every layer. Arrow keys move between heads, Enter opens one (or, while picking "
  + "heads to silence, picks it).";
const FAMILY = `system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const GAP = 8;
const MIN_TILE = 44, MAX_TILE = 104;

/**
 * The bands around the tiles for a theme's type: left holds "layer 11", top the head numbers, tag the behavior
 * label under each tile; all grow with the type (the projector's).
 */
export function frameFor(theme = THEMES.default) {
  const k = theme.axisPx / 14;
  return { left: Math.ceil(64 * k), top: Math.ceil(24 * k), tag: theme.tagPx + 4,
    font: `${theme.axisPx}px ${FAMILY}`, bold: `bold ${theme.axisPx}px ${FAMILY}`,
    small: `${theme.tagPx}px ${FAMILY}` };
}

/**
 * Every head pooled to size x size (largest code per block) in one atlas canvas, heads along x, layers along y.
 * Built once per payload and color scale: it reads every code of every head, which at 512 tokens is 19 M bytes.
 */
export function buildAtlas(payload, scale, theme = THEMES.default) {
  const LUT = attentionLUT(theme);
  const T = payload.length, L = payload.layers, H = payload.heads;
  const size = Math.min(T, 64);
  const set = payload.sets.attention;
  const atlas = { width: H * size, height: L * size, data: new Uint8ClampedArray(H * size * L * size * 4) };
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

/**
 * A picked head: a gray veil with white hatching and a dark cross over its tile, unlike the orange frame of the
 * selected head, and readable on any attention colors.
 */
function veil(ctx, x, y, tile) {
  ctx.save();
  ctx.beginPath();
  ctx.rect(x, y, tile, tile);
  ctx.clip();
  ctx.fillStyle = "rgba(80, 80, 80, 0.6)";
  ctx.fillRect(x, y, tile, tile);
  ctx.beginPath();
  for (let d = 0; d < 2 * tile; d += 7) {
    ctx.moveTo(x + d - tile, y + tile);
    ctx.lineTo(x + d, y);
  }
  ctx.strokeStyle = "rgba(255, 255, 255, 0.45)";
  ctx.lineWidth = 1.5;
  ctx.stroke();
  const m = Math.max(6, tile * 0.18);
  ctx.beginPath();
  ctx.moveTo(x + m, y + m);
  ctx.lineTo(x + tile - m, y + tile - m);
  ctx.moveTo(x + tile - m, y + m);
  ctx.lineTo(x + m, y + tile - m);
  ctx.lineCap = "round";
  ctx.strokeStyle = "#fff";
  ctx.lineWidth = 6;
  ctx.stroke();
  ctx.strokeStyle = "#222";
  ctx.lineWidth = 3;
  ctx.stroke();
  ctx.restore();
}

export const OWN_KEYS = true; // arrows between tiles, Enter opens (wireKeyboard): the shell's picture keys stay off

/** A head's statistics as sentences for a student. */
export function describeHead(stats, layer, head, T) {
  if (!stats) return [tr("Layer {layer}, head {head}.", { layer, head }), tr("This payload carries no head statistics.")];
  const names = { cls: "[CLS]", sep: "[SEP]", self: tr("itself"), previous: tr("the token just before"),
    next: tr("the token just after") };
  const top = Object.keys(names).sort((a, b) => stats[b] - stats[a])[0];
  const behavior = stats.dominant === "broad" ? tr("spreads its attention broadly")
    : stats.dominant === "mixed" ? tr("has no single habit")
      : tr("mostly attends to {what} ({share} of its attention)", { what: names[top], share: formatShare(stats[top]) });
  const uniform = Math.log(Math.max(T, 2));
  return [
    tr("Layer {layer}, head {head} {behavior}.", { layer, head, behavior }),
    tr("Entropy {entropy} nats: 0 would mean every token looks at exactly one token, {uniform} that it spreads "
      + "evenly over all {n}. Attended tokens are on average {distance} positions away.",
    { entropy: formatNumber(stats.entropy), uniform: formatNumber(uniform), n: T,
      distance: formatNumber(stats.distance, 1) }),
    tr("Shares of attention: [CLS] {cls}, [SEP] {sep}, self {self}, previous {previous}, next {next}.",
      Object.fromEntries(["cls", "sep", "self", "previous", "next"].map((k) => [k, formatShare(stats[k])]))),
  ];
}

/**
 * The heads a place of the overview stands for: a tile { layer, head } is one head; a layer's label
 * { layer, head: -1 } is every head of that layer; a head number { layer: -1, head } is that head in every layer.
 */
export function targetHeads(target, layers, heads) {
  if (target.head < 0) return Array.from({ length: heads }, (_, h) => [target.layer, h]);
  if (target.layer < 0) return Array.from({ length: layers }, (_, l) => [l, target.head]);
  return [[target.layer, target.head]];
}

/**
 * The keyboard cursor after an arrow key, or null for any other key. With labels, it may step left of head 0
 * onto the layer labels (head -1) or above layer 0 onto the head numbers (layer -1), never onto the corner.
 */
export function moveCursor(cursor, key, layers, heads, labels = false) {
  const step = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[key];
  if (!step) return null;
  const low = labels ? -1 : 0;
  const clamp = (v, hi) => Math.min(hi, Math.max(low, v));
  const next = { layer: clamp(cursor.layer + step[0], layers - 1), head: clamp(cursor.head + step[1], heads - 1) };
  return next.layer < 0 && next.head < 0 ? { ...cursor } : next;
}

/** Picked heads in words: "layer 0: heads 1 and 4; layer 2: head 3". */
export function describePicks(list) {
  const byLayer = new Map();
  for (const [l, h] of list) byLayer.set(l, [...(byLayer.get(l) || []), h]);
  const words = (hs) => (hs.length === 1 ? tr("head {head}", { head: hs[0] })
    : tr("heads {list} and {last}", { list: hs.slice(0, -1).join(", "), last: hs[hs.length - 1] }));
  return [...byLayer].map(([l, hs]) => tr("layer {layer}: {heads}", { layer: l, heads: words(hs) })).join("; ");
}

/** "1 head", "3 heads" */
const countHeads = (n) => (n === 1 ? tr("{n} head", { n }) : tr("{n} heads", { n }));

/** Where a tile is in the picture: [x, y] of its top-left corner. */
export function tileOrigin(layout, layer, head) {
  const { left: LEFT, top: TOP, tag: CAPTION } = layout.frame;
  return [LEFT + GAP + head * (layout.tile + GAP), TOP + layer * (layout.tile + CAPTION + GAP)];
}

/** Layout of the tiles for a box: the tile size follows the box's width, within [MIN_TILE, MAX_TILE]. */
export function layout(data, state, size) {
  const { payload, cache } = data;
  const H = payload.heads, L = payload.layers;
  const theme = size.theme || THEMES.default;
  const frame = frameFor(theme);
  const { left: LEFT, top: TOP, tag: CAPTION } = frame;
  const tile = Math.max(MIN_TILE, Math.min(MAX_TILE, Math.floor((size.width - LEFT - GAP) / H - GAP)));
  const width = LEFT + H * (tile + GAP) + GAP;
  const height = TOP + L * (tile + CAPTION + GAP) + GAP;
  // Built once per payload and color scale: it reads every code of every head.
  const atlas = cache.get(`atlas|${state.scale}|${theme.name}`, () => buildAtlas(payload, state.scale, theme));
  return {
    payload, state, theme, tile, width, height, atlas, frame, silence: Boolean(data.silence), locked: null,
    boxHeight: Math.min(height, Math.max(size.maxHeight, 260)),
    drawn: `layer=${state.layer} head=${state.head} scale=${state.scale} silenced=`
      + state.silenced.map(([l, h]) => `${l}.${h}`).join(","),
    geometry: { left: LEFT + GAP, top: TOP, tile, gap: GAP, rowPitch: tile + CAPTION + GAP, labelPx: theme.axisPx },
    caption: tr("Every head of every layer, each drawn as a thumbnail of its attention matrix (rows: "
      + "attending tokens, columns: attended ones; a thumbnail pixel shows the strongest weight in its patch). "
      + "The label under a tile names the head's habit when over half its attention goes one way: [CLS], [SEP], "
      + "self, prev (the token before), next; broad means spread out, mixed means no single habit.") + " "
      + (data.silence ? tr("Hover a head for its statistics, click it to open it (or, while picking, to pick it).")
        : tr("Hover a head for its statistics, click it to open it.")),
  };
}

/**
 * The place the overview points at: the pointer's, else the keyboard cursor while the picture has the focus.
 * Labels (whole rows and columns) count only while picking heads to silence.
 */
export function pointedAt(focus) {
  const ui = focus.ui || {};
  const t = focus.active || (ui.focused ? ui.cursor : null);
  return t && (t.layer < 0 || t.head < 0) && !ui.picking ? null : t;
}

export function paint(ctx, layout, v, focus, image = (pixels) => pixels) {
  const { payload, state, tile, atlas } = layout;
  const { left: LEFT, top: TOP, tag: CAPTION, font: FONT, bold: BOLD, small: SMALL } = layout.frame;
  const picking = Boolean(focus.ui?.picking);
  const size = atlas.size;
  const drawable = image(atlas.image);
  ctx.save();
  ctx.translate(-v.x, -v.y);
  ctx.imageSmoothingEnabled = false;
  for (let l = 0; l < payload.layers; l++) {
    for (let h = 0; h < payload.heads; h++) {
      const [x, y] = tileOrigin(layout, l, h);
      if (x > v.x + v.width || x + tile < v.x || y > v.y + v.height || y + tile + CAPTION < v.y) continue;
      ctx.drawImage(drawable, h * size, l * size, size, size, x, y, tile, tile);
      ctx.strokeStyle = "#bbb";
      ctx.lineWidth = 1;
      ctx.strokeRect(x - 0.5, y - 0.5, tile + 1, tile + 1);
      const label = payload.dominant ? HEADS.shortRoles[payload.dominant[l][h]] || payload.dominant[l][h] : "";
      ctx.font = SMALL;
      ctx.fillStyle = label === "broad" || label === "mixed" ? "#777" : "#123a66";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.fillText(label, x + tile / 2, y + tile + 4);
    }
  }
  ctx.imageSmoothingEnabled = true;
  if (layout.silence) for (const [l, h] of state.silenced) veil(ctx, ...tileOrigin(layout, l, h), tile);
  const mark = (layer, head, color, width, dash = []) => {
    const [x, y] = tileOrigin(layout, layer, head);
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.strokeRect(x - 3, y - 3, tile + 6, tile + 6);
    ctx.setLineDash([]);
  };
  const selected = layout.theme?.selected ?? SELECTED_COLOR;
  if (state.head === "all") for (let h = 0; h < payload.heads; h++) mark(state.layer, h, selected, 2);
  else mark(state.layer, state.head, selected, 3.5);
  const pointed = pointedAt(focus);
  if (pointed) {
    const dash = pointed === focus.hover ? [] : [5, 3]; // the keyboard's cursor is dashed
    for (const [l, h] of targetHeads(pointed, payload.layers, payload.heads)) mark(l, h, "#111", 2, dash);
  }
  ctx.restore();
  // Sticky axis labels: layers on the left, heads on top.
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, LEFT, v.height);
  ctx.fillRect(0, 0, v.width, TOP);
  // While picking, the labels pick whole rows and columns: drawn as links, underlined under the pointer.
  const labelColor = picking ? "#0b5cad" : "#222";
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  for (let l = 0; l < payload.layers; l++) {
    const y = tileOrigin(layout, l, 0)[1] + tile / 2 - v.y;
    if (y < TOP || y > v.height) continue;
    ctx.font = l === state.layer ? BOLD : FONT;
    ctx.fillStyle = labelColor;
    ctx.fillText(tr("layer {layer}", { layer: l }), 6, y);
    if (picking && pointed && pointed.head < 0 && pointed.layer === l) {
      ctx.fillRect(6, y + 9, ctx.measureText(`layer ${l}`).width, 1.5);
    }
  }
  ctx.textAlign = "center";
  for (let h = 0; h < payload.heads; h++) {
    const x = tileOrigin(layout, 0, h)[0] + tile / 2 - v.x;
    if (x < LEFT || x > v.width) continue;
    const text = h === 0 ? "head 0" : String(h);
    ctx.font = h === state.head ? BOLD : FONT;
    ctx.fillStyle = labelColor;
    ctx.fillText(text, x, TOP / 2);
    if (picking && pointed && pointed.layer < 0 && pointed.head === h) {
      const w = ctx.measureText(text).width;
      ctx.fillRect(x - w / 2, TOP / 2 + 9, w, 1.5);
    }
  }
  return {};
}

/** The tile under a point, or a label: { layer, head: -1 } left of the tiles, { layer: -1, head } above them. */
export function hit(layout, x, y, viewport = { x: 0, y: 0 }) {
  const { payload, tile } = layout;
  const { left: LEFT, top: TOP, tag: CAPTION } = layout.frame;
  const vx = x - viewport.x, vy = y - viewport.y;
  if (vx < LEFT && vy < TOP) return null;
  const head = vx < LEFT ? -1 : Math.floor((x - LEFT - GAP / 2) / (tile + GAP));
  const layer = vy < TOP ? -1 : Math.floor((y - TOP + GAP / 2) / (tile + CAPTION + GAP));
  if ((vx >= LEFT && head < 0) || head >= payload.heads || layer >= payload.layers) return null;
  return { layer, head };
}

/**
 * What a click or Enter on a place does: while picking, toggle its heads among those to silence; otherwise a
 * tile opens its head in the detail view (env.detailView(), lines by default).
 */
export function activate(layout, target, state, { picking = false, detailView = "lines" } = {}) {
  const { payload } = layout;
  if (picking) return { patch: { silenced: toggleHeads(state.silenced, targetHeads(target, payload.layers,
    payload.heads)) } };
  if (target.layer >= 0 && target.head >= 0) return { patch: { layer: target.layer, head: target.head,
    view: detailView } };
  return null;
}

/** A click on a place, with the shell's ui (picking mode) and env (the detail view to open). */
export function click(layout, target, state, { ui = {}, env = {} } = {}) {
  return activate(layout, target, state, { picking: Boolean(ui.picking),
    detailView: env.detailView ? env.detailView() : "lines" });
}

export const fileName = () => "overview";
export const BITMAP = true;

/** The statistics line, the silence tools and the keyboard: the overview's DOM beyond its picture. */
export function extras(root, shell) {
  const { selection, env, ui } = shell;
  ui.picking = false;
  ui.busy = false; // onSilence has not settled yet
  ui.cursor = null;
  ui.focused = false;
  const setPicking = (on) => {
    ui.picking = on;
    if (!on && ui.cursor) ui.cursor = { layer: Math.max(ui.cursor.layer, 0), head: Math.max(ui.cursor.head, 0) };
    shell.redraw();
  };
  const silence = typeof env.onSilence === "function" ? silenceTools(shell, setPicking) : null;
  const sync = (state) => syncSilence(root, silence, ui, state);
  if (silence) silence.run.onclick = () => runSilenced(shell, silence, sync);
  // The silence tools come first: the statistics below them change height with the pointer, and buttons must not
  // move away from it.
  const stats = el("div", { class: "bv-stats", "aria-live": "polite" });
  const note = silence ? el("p", { class: "bv-note", id: `${env.idPrefix || ""}view-silence-note` },
    tr("Silencing: a silenced head's attention output is set to zero in this forward pass; the predictions below "
    + "show what changes.")) : null;
  // An error was about the heads picked then: other picks make it stale.
  const stopError = selection.subscribe((state, changed) => {
    if (silence && !ui.busy && changed.has("silenced")) silence.error.hidden = true;
  });
  sync(selection.get());
  return {
    before: [...(silence ? [silence.tools, silence.error] : []), stats],
    after: note ? [note] : [],
    // The silence tools, an error and the silencing note take their height from the box, so that the caption
    // stays on the screen.
    reserve: () => (silence ? silence.tools.offsetHeight + silence.error.offsetHeight + note.offsetHeight + 12 : 0),
    refresh(layout, state, focus) {
      wireKeyboard(root, shell, setPicking);
      const lines = statsLines(shell.payload, state, focus, ui.picking, Boolean(silence));
      stats.replaceChildren(...lines.map((line, k) => el(k === 0 ? "strong" : "span", {}, line)));
      sync(state);
    },
    destroy: stopError,
  };
}

/** The buttons that pick heads to silence, run the prediction without them and clear the picks, with the status
 * line and an error line (run's click is wired by the caller). */
function silenceTools({ selection, env, ui }, setPicking) {
  const id = (name) => `${env.idPrefix || ""}${name}`;
  const pick = el("button", { type: "button", class: "bv-toggle bv-pick", id: id("view-silence-pick"),
    "aria-pressed": "false", title: tr("While this is on, a click on a head picks it to silence instead of opening it"),
    onclick: () => setPicking(!ui.picking) }, tr("Pick heads to silence"));
  const run = el("button", { type: "button", class: "bv-primary", id: id("view-silence-run"), disabled: true });
  const clear = el("button", { type: "button", id: id("view-silence-clear"), disabled: true,
    onclick: () => selection.set({ silenced: [] }) }, tr("Clear picks"));
  const status = el("span", { class: "bv-muted", role: "status" });
  const error = el("p", { class: "bv-error", role: "alert", hidden: true });
  const tools = el("div", { class: "bv-tools bv-silence" }, pick, run, clear, status);
  return { tools, pick, run, clear, status, error };
}

function syncSilence(root, silence, ui, state) {
  if (!silence) return;
  const n = state.silenced.length;
  silence.pick.setAttribute("aria-pressed", String(ui.picking));
  silence.run.textContent = ui.busy ? tr("Predicting…") : tr("Silence {heads} and predict", { heads: countHeads(n) });
  silence.run.disabled = ui.busy || n === 0;
  silence.tools.setAttribute("aria-busy", String(ui.busy));
  silence.clear.disabled = n === 0;
  root.dataset.picking = String(ui.picking);
}

/** The host's onSilence with the picked heads, the status line saying what happened (or the error why not). */
async function runSilenced({ selection, env, ui }, silence, sync) {
  const heads = selection.get().silenced.map(([l, h]) => [l, h]);
  if (ui.busy || heads.length === 0) return;
  ui.busy = true;
  silence.error.hidden = true;
  silence.status.textContent = tr("Predicting with {heads} silenced…", { heads: countHeads(heads.length) });
  sync(selection.get());
  try {
    await env.onSilence(heads);
    silence.status.textContent = tr("Last run silenced {heads}.", { heads: describePicks(heads) });
  } catch (error) {
    silence.status.textContent = "";
    silence.error.textContent = tr("The predictions with these heads silenced could not be made: {why}",
      { why: error && error.message ? error.message : String(error) });
    silence.error.hidden = false;
  } finally {
    ui.busy = false;
    sync(selection.get());
  }
}

/** The statistics line's lines: about the head (or row, or column) pointed at, else the one selected, and what a
 * click does while picking heads to silence. */
export function statsLines(payload, state, focus, picking, canSilence) {
  const pointed = pointedAt(focus);
  if (pointed && (pointed.layer < 0 || pointed.head < 0)) {
    const group = targetHeads(pointed, payload.layers, payload.heads);
    const all = group.every(([l, h]) => isPicked(state.silenced, l, h));
    const what = pointed.head < 0 ? tr("Every head of layer {layer}", { layer: pointed.layer })
      : tr("Head {head} of every layer", { head: pointed.head });
    return [`${what} (${countHeads(group.length)}).`,
      all ? tr("All of them are picked: click or press Enter to put them all back.")
        : tr("Click or press Enter to pick all of them to silence.")];
  }
  if (!pointed && picking) {
    return [tr("Picking heads to silence."),
      tr("Click a tile to pick or unpick that head; click a layer label (left) or a head number (top) for the whole "
        + "row or column."),
      tr("With the keyboard: focus the picture, move with the arrow keys, press Enter to pick.")];
  }
  const t = pointed || { layer: state.layer, head: state.head === "all" ? 0 : state.head };
  const lines = describeHead(headStatistics(payload, t.layer, t.head), t.layer, t.head, payload.length);
  if (!pointed && state.head === "all") lines[0] = `${tr("Layer {layer}: all heads selected.", { layer: state.layer })} ${lines[0]}`;
  // On the first line, so that the statistics keep their height.
  if (canSilence && isPicked(state.silenced, t.layer, t.head)) {
    lines[0] += ` ${picking ? tr("Picked to silence: click or press Enter to put it back.") : tr("Picked to silence.")}`;
  } else if (canSilence && picking) {
    lines[0] += ` ${tr("Click or press Enter to pick it to silence.")}`;
  }
  return lines;
}

/** Scrolls the picture so that the cursor's tile (or row, or column) is in sight, clear of the sticky labels. */
function reveal(shell, t) {
  const layout = shell.layout();
  const v = shell.viewport();
  const { left: LEFT, top: TOP, tag: CAPTION } = layout.frame;
  const [x, y] = tileOrigin(layout, Math.max(t.layer, 0), Math.max(t.head, 0));
  let { x: sx, y: sy } = v;
  if (t.head >= 0 && x - GAP < sx + LEFT) sx = x - GAP - LEFT;
  else if (t.head >= 0 && x + layout.tile + GAP > sx + v.width) sx = x + layout.tile + GAP - v.width;
  if (t.layer >= 0 && y - GAP < sy + TOP) sy = y - GAP - TOP;
  else if (t.layer >= 0 && y + layout.tile + CAPTION > sy + v.height) sy = y + layout.tile + CAPTION - v.height;
  if (sx !== v.x || sy !== v.y) shell.scrollTo(Math.max(0, sx), Math.max(0, sy));
}

const wiredScrollers = new WeakSet();

/** The keyboard, on the picture's scroller (made by the shell after the extras: wired on the first refresh). */
function wireKeyboard(root, shell, setPicking) {
  const scroller = root.querySelector(".bv-scroller");
  if (!scroller || wiredScrollers.has(scroller)) return;
  wiredScrollers.add(scroller);
  const { selection, payload, env, ui } = shell;
  scroller.addEventListener("focus", () => {
    const s = selection.get();
    ui.focused = true;
    ui.cursor ||= { layer: s.layer, head: s.head === "all" ? 0 : s.head };
    shell.redraw();
  });
  scroller.addEventListener("blur", () => { ui.focused = false; shell.redraw(); });
  scroller.addEventListener("keydown", (event) => {
    if (!ui.cursor || event.altKey || event.ctrlKey || event.metaKey) return;
    const next = moveCursor(ui.cursor, event.key, payload.layers, payload.heads, ui.picking);
    if (next) {
      ui.cursor = next;
      reveal(shell, next);
      shell.setHover(null); // the keyboard's place wins until the pointer moves again
    } else if (event.key === "Enter" || event.key === " ") {
      const answer = activate(shell.layout(), ui.cursor, selection.get(),
        { picking: ui.picking, detailView: env.detailView ? env.detailView() : "lines" });
      if (answer) selection.set(answer.patch);
    } else if (event.key === "Escape" && ui.picking) {
      setPicking(false);
    } else {
      return;
    }
    event.preventDefault(); // the arrows move the cursor, not the scroll bars; the space bar does not page down
  });
}
